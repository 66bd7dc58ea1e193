"""What runs the passes of many regions (internal; the device core is `colony.core`).

The host's pooled engine on one device (`engine`), the mesh of devices and processes
(`sharding`, `antshard`), and the planning of calls: buckets, memory, batches
(`planning`).
"""
