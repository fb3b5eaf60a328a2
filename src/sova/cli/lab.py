"""``sova lab``: a real multi-host libvirt lab on this machine (root)."""

from __future__ import annotations

from sova.cli.common import a_path, described, err, number, out


def add_parser(sub) -> None:
    lab = sub.add_parser(
        "lab",
        help="a real multi-host libvirt lab on this machine (root)",
        **described(
            "Bring up, inspect, load and tear down a lab of real libvirtd hosts (one per network, mount and "
            "cgroup namespace) running real QEMU guests (TCG) with Sova's guest agent, on this machine, as "
            "root. VFs are emulated: a rate-limited virtio NIC stands in for an SR-IOV VF.",
            [
                "sudo sova lab up --hosts 2 --vms-per-host 2",
                "sudo sova lab status",
                "sudo sova lab load vm1 cpu=100",
                "sudo sova lab down",
            ],
            "docs/lab.md says what the lab can and cannot show.",
        ),
    )
    lab_sub = lab.add_subparsers(dest="lab_command", metavar="ACTION", required=True)
    up = lab_sub.add_parser(
        "up",
        help="install what is missing, create the hosts, boot the VMs",
        **described(
            "Install the Debian packages the lab needs (libvirt, QEMU, busybox) unless --no-install, start one "
            "libvirtd per host in its own network, mount and cgroup namespaces, build the guest image with "
            "Sova's agent, and boot --vms-per-host VMs on each host. Prints each host's libvirt URI. Takes about "
            "20 s for two hosts; sova lab down removes everything it made.",
            ["sudo sova lab up --hosts 2 --vms-per-host 2", "sudo sova lab up --hosts 4 --vms-per-host 1 --no-install"],
        ),
    )
    up.add_argument(
        "--hosts",
        type=number("a number of hosts from 1 to 16", 1, 16, integer=True),
        default=2,
        metavar="N",
        help="number of hosts (1-16, default 2)",
    )
    up.add_argument(
        "--vms-per-host",
        type=number("a number of VMs from 0 to 16", 0, 16, integer=True),
        default=2,
        metavar="M",
        help="VMs booted on each host (default 2)",
    )
    up.add_argument("--no-install", action="store_true", help="do not apt-get install missing packages; stop instead")
    for name, text in (
        ("status", "hosts, VMs and where each runs"),
        ("down", "stop everything the lab started and remove its namespaces, cgroups and files"),
    ):
        lab_sub.add_parser(name, help=text, description=text)
    load = lab_sub.add_parser(
        "load",
        help="set the load a VM runs",
        **described(
            "Replace the load VM runs (duty cycles of 10 s, as the papers' lookbusy and netperf): cpu=PCT "
            "busy-loops PCT % of the time, net=VM2:PCT streams to VM2 PCT % of the time, paced=VM2:MBIT streams "
            "to VM2 at about MBIT Mbit/s (MBIT/10 Mbit every 0.1 s of guest time), disk=IOPS reads 4 KiB "
            "blocks with O_DIRECT at that rate (or disk=max). No setting: idle.",
            ["sudo sova lab load vm1 cpu=100", "sudo sova lab load vm2 net=vm3:50 disk=200", "sudo sova lab load vm1"],
        ),
    )
    load.add_argument("vm", metavar="VM")
    load.add_argument("settings", nargs="*", metavar="KEY=VALUE")
    crash = lab_sub.add_parser(
        "crash",
        help="crash a host: its daemon and its guests killed at once",
        **described(
            "Kill a host's libvirtd and its guests' QEMU processes with SIGKILL, as a power loss would: a "
            "manager sees the host stop answering (and, with ha-restart, boots its VMs on the others from the "
            "lab's shared disks). `sova lab up` or `down` cleans up after it.",
            ["sudo sova lab crash host1"],
        ),
    )
    crash.add_argument("host", metavar="HOST")
    for p in (up, load, crash, *[lab_sub.choices[n] for n in ("status", "down")]):
        p.add_argument("--dir", type=a_path, default=None, help="lab directory (default /var/lib/sova-lab)")


def command(args) -> int:
    from sova.lab.lab import DEFAULT_DIR, Lab

    lab = Lab(args.dir or DEFAULT_DIR, say=lambda text: err.print(text, markup=False))
    if args.lab_command == "up":
        state = lab.up(args.hosts, args.vms_per_host, install_missing=not args.no_install)
        for h in state.hosts:
            out.print(f"{h.name}  {h.uri}", markup=False, soft_wrap=True)
        out.print("VFs in this lab are emulated (a rate-limited virtio NIC), not SR-IOV hardware", markup=False)
    elif args.lab_command == "status":
        for line in lab.status():
            out.print(line, markup=False, soft_wrap=True)
    elif args.lab_command == "load":
        out.print(f"{args.vm}: {lab.load(args.vm, args.settings)}", markup=False)
    elif args.lab_command == "crash":
        killed = lab.crash(args.host)
        out.print(f"{args.host} crashed: {len(killed)} process(es) killed", markup=False)
    else:
        lab.down()
        out.print(f"lab in {lab.dir} removed", markup=False)
    return 0
