"""Evidence from a running cluster: nccl-tests output and NCCL_DEBUG=INFO logs.

The cloud APIs say what is attached; these say what NCCL actually used. `nccl_tests` parses nccl-tests tables
and `nccl_log` streams NCCL logs (bounded memory, line by line); `checks` holds the NCCL2xx finding
definitions as data; `judge` turns parsed evidence into `findings.Finding`s; `report` renders them.
"""
