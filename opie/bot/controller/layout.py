# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at
#
#      http://www.apache.org/licenses/LICENSE-2.0
#
# Unless required by applicable law or agreed to in writing, software
# distributed under the License is distributed on an "AS IS" BASIS, WITHOUT
# WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied. See the
# License for the specific language governing permissions and limitations
# under the License.

"""Where the controller's two sides meet: the job's store and Nova.

The two sides never reach each other; each writes its own objects of
the job's store, and the tenant's side tags the controller's server:

``controller/server.json`` (tenant)
    The controller's own server id, as Nova answered the tenant: the
    controller deletes that server, and no other, once the job is over.
``controller/inputs.json`` (tenant)
    The manifest of the job's input files (:mod:`opie.bot.state.staging`),
    which the tenant's client uploaded before it made the controller:
    the job file's directory is on the tenant's machine.  (In the store,
    not the user data, which Nova bounds at 64 KiB.)
``controller/journal.json`` (controller)
    Every record of its journal and a heartbeat, published at every poll,
    and at once after a record the tenant's side must never miss: the
    intent of a server create (with its nonce), so that a controller that
    dies during the call leaves its server findable (the nonce rule of
    :mod:`opie.bot.openstack.nova`).  The job's end (``done``,
    ``stopped``) is published only with the report, and a cancel's
    records once the controller has done it.
``controller/cancel.json`` (tenant)
    A cancel request, read by the controller at every poll.
``controller/report.json``, ``controller/report.html`` (controller)
    The job's report, written before the controller deletes itself.
"""

SERVER_KEY = 'controller/server.json'
INPUTS_KEY = 'controller/inputs.json'
JOURNAL_KEY = 'controller/journal.json'
CANCEL_KEY = 'controller/cancel.json'
REPORT_KEY = 'controller/report'        # .json and .html
# The controller's cloud in the clouds.yaml its user data writes.
CLOUD = 'opie-controller'


def tag_for(job_id):
    """The controller's Nova tag: at most 60 characters, as Nova wants,
    for the longest job id (see :data:`opie.bot.job.schema`)."""
    return 'opie-ctl-%s' % job_id
