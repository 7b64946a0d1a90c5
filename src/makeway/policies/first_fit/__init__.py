"""The first-fit model: priority then submit order, first fit, no preemption."""
