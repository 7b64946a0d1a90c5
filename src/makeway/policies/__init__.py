"""One module (or small package) per preemption model, behind ``makeway.core.policy.PreemptionModel``."""
