"""The array API standard's chapters, one module each.

Everything here but the contract operations runs on the host (NumPy), labelled `host` in trace
and explain.
"""
