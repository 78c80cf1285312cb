"""Memory foresight: KV layout, the prefill spike, calibration, admission, and the probes that
read the device. Everything here but the probe is pure Python (sizes in bytes, lengths in tokens)."""
