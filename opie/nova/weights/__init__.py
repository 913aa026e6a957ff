"""OPIE's scheduler weighers, both computed on h_f.

Add them to Nova's::

    [filter_scheduler]
    weight_classes = nova.scheduler.weights.all_weighers,
        opie.nova.weights.overcommit.OvercommitWeigher,
        opie.nova.weights.preemption_cost.PreemptionCostWeigher
"""
