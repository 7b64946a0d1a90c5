"""YuniKorn: hierarchical queues with guarantees, the preemptor and quota-change preemption."""
