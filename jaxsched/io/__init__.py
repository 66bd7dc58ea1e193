"""Front ends: LLVM AMDGPU MIR in and out, PTX to kernel instruction strings."""
