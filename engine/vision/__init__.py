"""Image inputs: reading a GGUF mmproj, pre-processing images, the vision encoders and the cache
of encoded images (issue 31; docs/vision.md).

`projectors` describes each supported projector type, `mmproj` reads and checks a file,
`image` decodes an attachment, `preprocess` sizes and normalises it as llama.cpp's libmtmd
does, `ops`/`encoders` compute the rows, `cache` keeps them and `encode.ImageEncoder` ties it
together. Putting the rows into the language model is the generation loop's, not this room's.

A room of the loop layer (see the engine layers contract in pyproject.toml): it may import the
runners, the fast path, arch, gguf, kernels and the boundary, never serve, remote or cli.
"""
