"""The project's units, defined once: the packet and the Mbit/s.

Every rate in jaxcc is in bytes per second and every size in bytes; ``MBPS`` converts Mbit/s
to bytes/s.  One packet is 1500 bytes everywhere: the model's MSS, an emulated UDP datagram with
its headers, a Mahimahi delivery opportunity, ns-3's packet and a policy file's window step.
"""

PACKET_BYTES = 1500  # one packet, in bytes (an int: tc's burst and limit, scenario buffers, spec files)
MSS = float(PACKET_BYTES)  # the same packet as the model computes with it (float32 arrays)
MBPS = 125_000.0  # bytes per second in one Mbit/s
