"""IBM Spectrum Symphony: consumer tree, session ranks and slot reclaim."""
