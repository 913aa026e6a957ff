"""opie-bot's OpenStack backend: :mod:`opie.bot.interfaces` on a real
cloud (keystoneauth1, python-novaclient, Swift), the task agent's
side of the object store, and the real-time loop that drives them."""
