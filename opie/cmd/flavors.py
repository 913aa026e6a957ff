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

"""``opie-manage flavor``: preemptible flavors.

``opie-manage flavor create-preemptible NORMAL_FLAVOR [--name NAME]``
creates the preemptible twin of a normal flavor: the same size, public or
private to the same projects, the normal flavor's extra specs, plus
``opie:preemptible=true`` and resource overrides that move what it asks of
Placement from VCPU, MEMORY_MB and DISK_GB to the ``CUSTOM_PREEMPTIBLE_*``
classes::

    opie-manage flavor create-preemptible m1.small --os-cloud admin
    # -> m1.small-preemptible

Running it again is harmless: an existing flavor of that name that is
already the right preemptible twin is left as it is; any other is an
error. Flavors that ask for what preemption cannot free (pinned CPUs, PCI
devices, resource classes OPIE does not model) are refused.

``opie-manage flavor set-preemptible FLAVOR`` sets right a flavor already
marked ``opie:preemptible=true``: it adds the resource overrides it lacks
(or has wrong) for its size. Until then the scheduler treats the flavor as
a normal one, and ``opie-manage audit --cloud`` names this command. Nova
keeps a copy of the flavor in each server: servers started before the fix
stay normal ones until resized.

``opie-manage flavor set-terms FLAVOR [--tier N] [--minimum-uptime S]
[--notice S] [--maximum-lifetime S]`` sets the terms a preemptible flavor
promises its servers (:class:`opie.core.flavor_spec.Terms`): ``opie:tier``
(a normal request takes its victims from the lowest tier first),
``opie:minimum_uptime`` (seconds before which a server is never a victim),
``opie:notice`` (seconds a victim is told before it is stopped) and
``opie:maximum_lifetime`` (seconds after which a server is ended).
Tenants read them with ``openstack flavor show``. Servers already running
keep the terms they were booted with (Nova's copy of the flavor) until
resized.
``opie-manage flavor list`` shows every preemptible flavor with its terms.
"""
from opie.core import contract
from opie import arguments
from opie import oneline
from opie.cmd import errors
from opie.cmd import options
from opie.core import flavor_spec


def register(subparsers):
    flavor = subparsers.add_parser('flavor', help='preemptible flavors')
    actions = flavor.add_subparsers(dest='action', required=True,
                                    metavar='ACTION')
    create = actions.add_parser(
        'create-preemptible',
        help='create the preemptible twin of a normal flavor',
        description='Create the preemptible twin of NORMAL_FLAVOR: same '
        'size, access and extra specs, plus %s=true and its VCPU, '
        'MEMORY_MB and DISK_GB requested as CUSTOM_PREEMPTIBLE_* instead. '
        'An existing flavor of that name that already is the right twin is '
        'left unchanged.' % contract.PREEMPTIBLE_SPEC)
    create.add_argument('normal', metavar='NORMAL_FLAVOR',
                        help='name or id of the normal flavor')
    create.add_argument('--name',
                        help='name of the new flavor (default: '
                        'NORMAL_FLAVOR%s)' % contract.NAME_SUFFIX)
    create.add_argument('--description',
                        help='description of the new flavor (default: '
                        'that of the normal one)')
    options.add_cloud_arguments(create)
    create.set_defaults(func=create_command)
    fix = actions.add_parser(
        'set-preemptible',
        help='give a flavor marked preemptible the overrides it lacks',
        description='Set on FLAVOR, marked %s=true, the VCPU, MEMORY_MB '
        'and DISK_GB overrides (0) and CUSTOM_PREEMPTIBLE_* amounts (its '
        'size) it lacks or has wrong. A flavor already right is left '
        'unchanged.' % contract.PREEMPTIBLE_SPEC)
    fix.add_argument('flavor', metavar='FLAVOR',
                     help='name or id of the flavor marked preemptible')
    options.add_cloud_arguments(fix)
    fix.set_defaults(func=set_command)
    terms = actions.add_parser(
        'set-terms',
        help='set the tier, minimum uptime, notice and maximum lifetime of '
        'a preemptible flavor',
        description='Set the terms FLAVOR, a preemptible flavor, promises '
        'its servers: %s (a normal request takes its victims from the '
        'lowest tier first; a flavor without it is tier 0), %s '
        '(seconds before which a server is never a victim; a flavor '
        'without it has [opie] minimum_uptime), %s (seconds a victim '
        'is told before it is stopped cleanly; a flavor without it has '
        '[opie] preemption_notice) and %s (seconds after which a server '
        'is ended, 0 for never; a flavor without it has [opie] '
        'maximum_lifetime). Servers already running keep the terms they '
        'were booted with until resized.'
        % (flavor_spec.TIER_SPEC, flavor_spec.MINIMUM_UPTIME_SPEC,
           flavor_spec.NOTICE_SPEC, flavor_spec.MAXIMUM_LIFETIME_SPEC))
    terms.add_argument('flavor', metavar='FLAVOR',
                       help='name or id of the preemptible flavor')
    terms.add_argument('--tier', metavar='N',
                       type=arguments.whole_number(0, flavor_spec.MAX_TIER),
                       help='its tier, 0 to %d' % flavor_spec.MAX_TIER)
    terms.add_argument('--minimum-uptime', metavar='SECONDS',
                       type=arguments.whole_number(
                           0, flavor_spec.MAX_MINIMUM_UPTIME),
                       help='its minimum uptime in seconds, 0 to %d'
                       % flavor_spec.MAX_MINIMUM_UPTIME)
    terms.add_argument('--notice', metavar='SECONDS',
                       type=arguments.whole_number(0, flavor_spec.MAX_NOTICE),
                       help='the notice its victims get in seconds, 0 to %d'
                       % flavor_spec.MAX_NOTICE)
    terms.add_argument('--maximum-lifetime', metavar='SECONDS',
                       type=arguments.whole_number(
                           0, flavor_spec.MAX_MAXIMUM_LIFETIME),
                       help='the age in seconds at which its servers are '
                       'ended, 1 to %d; 0 for none'
                       % flavor_spec.MAX_MAXIMUM_LIFETIME)
    options.add_cloud_arguments(terms)
    terms.set_defaults(func=set_terms_command)
    listing = actions.add_parser(
        'list', help='the preemptible flavors and their terms',
        description='List every preemptible flavor with its size, tier, '
        'minimum uptime, notice and maximum lifetime ("default": [opie] '
        'minimum_uptime, [opie] preemption_notice, [opie] '
        'maximum_lifetime), and the problems of their terms.')
    options.add_cloud_arguments(listing)
    listing.set_defaults(func=list_command)


def twin_specs(normal):
    """Extra specs of the preemptible twin of the flavor ``normal``."""
    if contract.is_preemptible(normal.extra_specs):
        raise errors.UsageError('flavor %s is already preemptible'
                                % normal.name)
    refused = flavor_spec.unsupported_problems(normal)
    if refused:
        raise errors.UsageError('cannot make %s preemptible: %s' % (
            normal.name, '; '.join(p.message for p in refused)))
    specs = dict(normal.extra_specs)
    specs.update(flavor_spec.preemptible_specs(normal))
    return specs


def specs_to_set(flavor):
    """The extra specs ``set-preemptible`` sets on ``flavor``."""
    if not contract.is_preemptible(flavor.extra_specs):
        raise errors.UsageError(
            'flavor %s is not marked %s=true: create its preemptible twin '
            'with opie-manage flavor create-preemptible %s'
            % (flavor.name, contract.PREEMPTIBLE_SPEC, flavor.name))
    refused = flavor_spec.unsupported_problems(flavor)
    if refused:
        raise errors.UsageError('cannot make %s preemptible: %s' % (
            flavor.name, '; '.join(p.message for p in refused)))
    return flavor_spec.missing_specs(flavor)


def _set_missing(args, to_set):
    """Set on the flavor ``args.flavor`` names the extra specs
    ``to_set(flavor)`` says it lacks: ``(flavor, its id, what was set)``."""
    from opie.cmd import cloud
    with cloud.errors_as_usage():
        conn = cloud.connect(args)
        source = _find(conn, args.flavor)
        flavor = cloud.flavor_of(source)
        specs = to_set(flavor)
        if specs:
            source.set_keys(specs)
    return flavor, source.id, specs


def set_command(args):
    flavor, flavor_id, specs = _set_missing(args, specs_to_set)
    if not specs:
        print('flavor %s (id %s) already is preemptible: left unchanged'
              % (flavor.name, flavor_id))
        return 0
    print('set on flavor %s (id %s), %s:'
          % (flavor.name, flavor_id, flavor.size()))
    for key in sorted(specs):
        print('  %s=%s' % (key, specs[key]))
    return 0


def terms_to_set(flavor, tier=None, minimum_uptime=None, notice=None,
                 maximum_lifetime=None):
    """The extra specs ``set-terms`` sets on ``flavor``: the terms given
    that it does not have already."""
    wanted = {flavor_spec.TIER_SPEC: tier,
              flavor_spec.MINIMUM_UPTIME_SPEC: minimum_uptime,
              flavor_spec.NOTICE_SPEC: notice,
              flavor_spec.MAXIMUM_LIFETIME_SPEC: maximum_lifetime}
    if all(value is None for value in wanted.values()):
        raise errors.UsageError('give --tier, --minimum-uptime, --notice, '
                                '--maximum-lifetime or several')
    if not contract.is_preemptible(flavor.extra_specs):
        raise errors.UsageError(
            'flavor %s is not preemptible: terms of preemption mean nothing '
            'to its servers; create its preemptible twin with opie-manage '
            'flavor create-preemptible %s' % (flavor.name, flavor.name))
    return {key: str(value) for key, value in wanted.items()
            if value is not None
            and flavor.extra_specs.get(key) != str(value)}


def set_terms_command(args):
    flavor, flavor_id, specs = _set_missing(args, lambda flavor: terms_to_set(
        flavor, args.tier, args.minimum_uptime, args.notice,
        args.maximum_lifetime))
    if not specs:
        print('flavor %s (id %s) already has these terms: left unchanged'
              % (flavor.name, flavor_id))
        return 0
    print('set on flavor %s (id %s): %s; servers already running keep '
          'the terms they were booted with until resized' % (
              flavor.name, flavor_id,
              ', '.join('%s=%s' % item for item in sorted(specs.items()))))
    return 0


def terms_table(flavors):
    """Lines of ``list``: each preemptible flavor of ``flavors`` (core
    Flavors) with its size and terms, then the problems of its terms."""
    marked = sorted((f for f in flavors
                     if contract.is_preemptible(f.extra_specs)),
                    key=lambda f: f.name)
    if not marked:
        return ['no preemptible flavor']
    rows = [('FLAVOR', 'SIZE', 'TIER', 'MINIMUM UPTIME', 'NOTICE',
             'MAXIMUM LIFETIME')]
    found = []
    for flavor in marked:
        terms, bad = flavor_spec.terms(flavor.extra_specs)
        bad = [term.spec for term, _ in bad]
        rows.append((flavor.name, str(flavor.size()), str(terms.tier)) + tuple(
            '%d s' % value if spec in flavor.extra_specs and spec not in bad
            else 'default' for spec, value in (
                (flavor_spec.MINIMUM_UPTIME_SPEC, terms.minimum_uptime),
                (flavor_spec.NOTICE_SPEC, terms.notice),
                (flavor_spec.MAXIMUM_LIFETIME_SPEC,
                 terms.maximum_lifetime))))
        found += flavor_spec.terms_problems(flavor)
    widths = [max(len(row[i]) for row in rows) for i in range(5)]
    lines = ['  '.join(cell.ljust(width) for cell, width
                       in zip(row, widths)) + '  ' + row[5]
             for row in rows]
    return lines + ['%s: %s (fix: %s)' % (p.subject, p.message, p.fix)
                    for p in found]


def list_command(args):
    from opie.cmd import cloud
    with cloud.errors_as_usage():
        flavors = [cloud.flavor_of(f) for f in cloud.connect(args).flavors()]
    for line in terms_table(flavors):
        print(oneline.escape(line))
    return 0


def create_command(args):
    # Only now: the cloud clients take most of opie-manage's start-up.
    from opie.cmd import cloud
    with cloud.errors_as_usage():
        conn = cloud.connect(args)
        source = _find(conn, args.normal)
        normal = cloud.flavor_of(source)
        specs = twin_specs(normal)
        name = args.name or normal.name + contract.NAME_SUFFIX
        existing = conn.find_flavor(name)
        if existing is not None:
            return _existing(normal, cloud.flavor_of(existing),
                             existing.id)
        created = _create(conn, source, name, specs, args.description)
    print('created flavor %s (id %s): %s'
          % (name, created.id, normal.size()))
    for key in sorted(specs):
        print('  %s=%s' % (key, specs[key]))
    return 0


def _find(conn, name_or_id):
    found = conn.find_flavor(name_or_id)
    if found is None:
        raise errors.UsageError('no flavor with name or id %r' % name_or_id)
    return found


def _existing(normal, twin, flavor_id):
    same_size = twin.size() == normal.size()
    if (same_size and not flavor_spec.check(twin)
            and contract.is_preemptible(twin.extra_specs)):
        print('flavor %s (id %s) is already the preemptible twin of %s: '
              'left unchanged' % (twin.name, flavor_id, normal.name))
        return 0
    raise errors.UsageError(
        'flavor %s already exists and is not a preemptible flavor of %s: '
        'choose another --name, or delete it first'
        % (twin.name, normal.size()))


def _create(conn, source, name, specs, description):
    created = conn.nova.flavors.create(
        name, source.ram, source.vcpus, source.disk, flavorid='auto',
        ephemeral=source.ephemeral or 0, swap=source.swap or 0,
        is_public=source.is_public,
        description=description or source.description)
    try:
        created.set_keys(specs)
        if not source.is_public:
            for access in conn.nova.flavor_access.list(flavor=source):
                conn.nova.flavor_access.add_tenant_access(
                    created, access.tenant_id)
    except BaseException:
        # A flavor left without its extra specs would be a normal flavor
        # with a preemptible name.
        conn.nova.flavors.delete(created)
        raise
    return created
