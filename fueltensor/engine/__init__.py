"""From an operation to a kernel: plan (admit, repair, price), dispatch, execute, and policy."""
