"""OPIE: OpenStack Preemptible Instances Extension."""
