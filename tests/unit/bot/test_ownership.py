"""What a job owns, read from its journal."""
from opie.bot.openstack import live


def test_each_answer_belongs_to_the_intent_before_it():
    records = [
        {'event': 'server_creating', 'key': 'p0', 'nonce': 'a'},
        {'event': 'server_create', 'server': 's0', 'key': 'p0'},
        # Killed during this call: no answer.
        {'event': 'server_creating', 'key': 'p1', 'nonce': 'b'},
        {'event': 'resume'},
        {'event': 'server_creating', 'key': 'm1', 'nonce': 'c'},
        {'event': 'server_create', 'server': 's2', 'key': 'm1'},
    ]

    created, intents = live._owned(records)

    assert sorted(created) == ['s0', 's2']
    assert intents == {'b': records[2]}
