"""Pareto (staged TD3 with a BBR expert, segmented prioritized replay): every piece in one place.

* ``td3`` — ``make_train`` (Algorithms 2 and 3) and the pure TD3 learning step;
* ``networks`` — the LSTM actor (a policy-file spec) and the twin LSTM critics (§III);
* ``replay`` — the segmented prioritized buffer (§IV, eqs. 2, 6, 9);
* ``expert`` — BBR at monitor-interval granularity (Algorithm 3 lines 3–4);
* ``env_adapter`` — "Pareto stage X" → the vmappable environment the agent steps.

``config.algo = "pareto_td3"`` names this package's ``td3`` module (``jaxcc.agents.ALGOS``).
"""
