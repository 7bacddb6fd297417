"""Tool calling: tool definitions into the chat template, calls out of the reply.

`render` puts ``tools=`` (and past calls and results) into the model's own template, or a
Hermes fallback when it has none; `parse` splits a streamed reply into text and complete calls
per family; `stream` turns those into `ToolCallDelta` events. The generation loop
(`engine.generate`) wires them in when a request offers tools. Grammar-constrained decoding
lives in ``grammar*`` modules here (not owned by these). Pure Python, no torch.
"""
