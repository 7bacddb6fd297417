"""Image inputs (to come): reading a GGUF mmproj, preprocessing images, the vision encoders and
the cache of encoded images, on the same runners as the text model.

A room of the loop layer (see the engine layers contract in pyproject.toml): it may import the
runners, the fast path, arch, gguf, kernels and the boundary, never serve, remote or cli.
"""
