from makeway.core.policy import PreemptionModel


class KueueModel(PreemptionModel):
    name = "kueue"
