"""The generated end-to-end access test's parts (tests/hardening/test_access_e2e.py): the
model of the world it keeps, the driver's calls and checks, the world built through the
API, and the reads compared with the model."""
