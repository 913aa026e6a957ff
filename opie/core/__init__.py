"""The Nova-free preemption core.

Everything that decides *where* a request goes and *which* preemptible
instances die for it lives here, with no import of Nova: resource vectors
(:mod:`.resources`), the two host states h_f and h_n (:mod:`.host`), the
cost plugins (:mod:`.costs`), exact victim selection (:mod:`.victims`) and
one scheduling decision end to end (:mod:`.scheduling`). The Nova plugin and
``opie-manage plan`` are thin layers over it.
"""
