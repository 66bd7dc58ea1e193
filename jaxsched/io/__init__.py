"""Front ends: LLVM AMDGPU MIR in and out (`jaxsched.io.mir`), PTX to kernel instruction strings
(`jaxsched.io.ptx`)."""
