"""Front ends: LLVM AMDGPU MIR in and out (`jaxsched.io.mir`), PTX to kernel instruction strings
(`jaxsched.io.ptx`). Their public names are those modules' ``__all__`` (docs/api.md); the other
modules here (``mir_parse``, ``mir_regions``, ``mir_write``, ``mir_llc``, ...) are internal."""
