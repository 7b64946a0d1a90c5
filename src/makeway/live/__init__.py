"""The live service: the same core and models as the simulator, driven by wall time, an API and agents."""
