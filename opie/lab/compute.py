"""``nova-compute`` on the lab's virt driver (see :mod:`opie.lab.virt`).

Nova's own ``nova-compute`` main, with :mod:`opie.lab.virt` registered as
``nova.virt.opie_lab`` first, since Nova imports drivers only from there.
"""
import sys


def main():
    # Nova's compute command monkey patches before anything else imports.
    from nova.cmd import compute
    from nova import virt

    from opie.lab import virt as lab_virt
    sys.modules['nova.virt.opie_lab'] = lab_virt
    virt.opie_lab = lab_virt
    compute.main()


if __name__ == '__main__':
    main()
