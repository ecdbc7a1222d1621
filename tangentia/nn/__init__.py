"""Neural-network functions (``tangentia.nn``)."""
