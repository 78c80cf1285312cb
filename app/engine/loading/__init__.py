"""Opening a model: placement (device, dtype, attention, quantization) decided before loading,
the loader and its report, the machine's environment, folder trust, the catalog and fit."""
