"""Design-space enumeration, the sweep (compile, verify, time), the tuning database and auto."""
