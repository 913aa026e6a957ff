"""OPIE's Nova scheduler plugin (design A).

Preemptible flavors consume ``CUSTOM_PREEMPTIBLE_*`` resource classes
instead of the standard ones, so Placement's standard usage of a compute
node is h_n and standard plus custom usage is h_f. On top of that:

* :mod:`.filters` and :mod:`.weights` run inside any ``nova-scheduler``;
* :mod:`.manager` (started by ``opie-scheduler``, :mod:`.cmd`) picks,
  claims (:mod:`.claim`) and terminates (:mod:`.terminate`) victims in the
  same scheduling pass, keeping per-request state in :mod:`.plan`;
* :mod:`.reconciler` repairs h_f overcommit left by concurrent requests.

Options live in the ``[opie]`` group of nova.conf (:mod:`.conf`).
"""
