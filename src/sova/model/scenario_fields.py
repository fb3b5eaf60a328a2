"""The keys of a scenario file: each table's fields with kind, default, range and a line of documentation.

The validator (``sova.model.scenario_reader``) reads scenarios with these descriptions, and
docs/scenario-format.md is generated from them (``make docs``), so the docs cannot drift from the code.
"""

from __future__ import annotations

from sova.model.power_models import MODELS
from sova.model.schema import MAX_SEED, REQUIRED, Field
from sova.model.workload_params import STRUCTURAL_PARAMS, TRACE_SAMPLING, WORKLOAD_PARAMS  # noqa: F401

TOPOLOGY_KINDS = ("single-switch", "leaf-spine", "fat-tree", "three-tier")
TIMEOUT_ACTIONS = ("abort", "suspend", "postcopy")  # what a migration timeout does, as libvirt offers it
WORKLOAD_KINDS = (
    "lookbusy",
    "netperf",
    "httperf",
    "web",
    "mapreduce",
    "fio",
    "filebench",
    "block-trace",
    "transfer",
    "batch",
    "sysbench",
    "planetlab",
    "bitbrains",
    "azure",
    "opendc",
    "observed",
)
LIFETIME_KINDS = ("azure", "opendc", "bitbrains")  # traces that size VMs (azure, opendc: and say when they lived)
MODES = ("auto", "approve", "dry-run")
AUTO_HOSTS = ("auto", "first-fit", "random")

# a request's wait for a hardware thread when it wakes a guest on a busy host, from the lab
# (benchmarks/sched_wait_lab.py, 2026-11-27: 2,000 ICMP echoes to an idle QEMU guest while 0-5 others keep
# their vCPUs busy, on this machine's 2 cores under Linux 6.18's EEVDF scheduler): the mean round trip's
# rise over an idle host's with the others filling the threads (x = 1: 0.265 ms), and per runnable vCPU
# per thread beyond (x = 2: 1.419 ms); x = 0.5, 1.5 and 2.5 test it (docs/simulator.md)
WAKE_WAIT = 0.265e-3
WAKE_WAIT_OVER = 1.154e-3
ELSEWHERE = (None, None)  # no typical range of its own: sova.model.plausibility warns, summed over entries

SCENARIO_FIELDS = {
    "name": Field("str", REQUIRED, "short name of the scenario, used in reports"),
    "description": Field("str", "", "one paragraph saying what the scenario shows"),
    "duration": Field("duration", REQUIRED, "simulated time to run", lo=0, lo_open=True, typical=ELSEWHERE),
    "step": Field(
        "duration", 1.0, "simulator time step (above 60 s: trace studies; see docs/simulator.md)", lo=0.001, hi=3600
    ),
    "seed": Field("int", 1, "random seed; the same seed gives the same run", lo=0, hi=MAX_SEED),
}

TOPOLOGY_FIELDS = {
    "kind": Field("str", "single-switch", "shape of the fabric", choices=TOPOLOGY_KINDS),
    "link_speed": Field(
        "bandwidth", 10e9, "speed of host links (and of all links unless set below)", lo=0, typical=ELSEWHERE
    ),
    "uplink_speed": Field("bandwidth", 0.0, "leaf-spine / fat-tree: switch-to-switch links (0: link_speed)", lo=0),
    "latency_per_hop": Field("duration", 2e-6, "one-way latency per switch hop", lo=0),
    "leaves": Field("int", 4, "leaf-spine: number of leaf (ToR) switches", lo=1),
    "spines": Field("int", 2, "leaf-spine: number of spine switches (ECMP over them)", lo=1),
    "hosts_per_leaf": Field("int", 8, "leaf-spine: hosts under each leaf", lo=1),
    "k": Field("int", 4, "fat-tree: switch radix k (k^3/4 hosts at full size)", lo=2),
    "hosts_per_edge": Field("int", 0, "fat-tree: hosts per edge switch (0: k/2; more oversubscribes)", lo=0),
    "racks": Field("int", 4, "three-tier: number of racks (ToR switches)", lo=1),
    "hosts_per_rack": Field("int", 20, "three-tier: hosts per rack", lo=1),
    "racks_per_agg": Field("int", 2, "three-tier: racks under each aggregation switch", lo=1),
    "tor_oversubscription": Field("float", 1.0, "three-tier: ToR-to-aggregation oversubscription", lo=1),
    "agg_oversubscription": Field("float", 1.0, "three-tier: aggregation-to-core oversubscription", lo=1),
    "external_speed": Field(
        "bandwidth", 100e9, "link from the top of the fabric to the outside world", lo=0, typical=ELSEWHERE
    ),
}

NIC_FIELDS = {
    "bandwidth": Field(
        "bandwidth", 10e9, "physical port speed (10 GbE by default)", lo=0, lo_open=True, typical=ELSEWHERE
    ),
    "sriov": Field("bool", True, "whether the NIC can expose SR-IOV virtual functions"),
    "max_vfs": Field("int", 63, "VFs per port (an Intel 82599 port has up to 63)", lo=0, hi=256),
}

HOST_FIELDS = {
    "name": Field("str", REQUIRED, "host name; with count, a pattern with {i} (1-based)"),
    "count": Field("int", 1, "how many hosts this entry makes", lo=1),
    "start": Field("int", 1, "the first {i} of a counted entry", lo=0),
    "cores": Field("int", 16, "hardware threads the hypervisor schedules on", lo=1),
    "threads_per_core": Field(
        "int", 1, "hardware threads per physical core (2: hyper-threading; siblings share a core)", lo=1, hi=8
    ),
    "hypervisor": Field(
        "str",
        "kvm",
        "xen: guests' block IO goes through Dom0's blkback and the host's grant table (Dom0 CPU per request, "
        "stalls when the table is full); kvm: neither is modelled",
        choices=("kvm", "xen"),
    ),
    "ghz": Field(
        "float", 2.6, "clock speed per core; 1 GHz counts as 1,000 MIPS where mips is not given", lo=0, lo_open=True
    ),
    "mips": Field("float", 0.0, "speed per core in MIPS (0: from ghz), for VMs whose demand is in MIPS", lo=0),
    "memory": Field("memory", 65536.0, "RAM (64 GiB by default)", lo=0, lo_open=True, typical=ELSEWHERE),
    "dom0_vcpus": Field("int", 2, "vCPUs of the control domain (Dom0 / host networking)", lo=1),
    "dom0_weight": Field("int", 256, "scheduler weight of Dom0 (Xen credit default 256)", lo=1),
    "dom0_memory": Field("memory", 4096.0, "memory reserved for Dom0", lo=0),
    "power_idle": Field("float", 100.0, "power at idle, W (linear power model)", lo=0),
    "power_max": Field("float", 250.0, "power at full CPU, W (linear power model)", lo=0),
    "power_model": Field(
        "str",
        "linear",
        "power against CPU utilisation: linear (power_idle to power_max), a SPECpower table (hp-ml110-g4, "
        "hp-ml110-g5: the servers of CloudSim's PlanetLab study; ibm-x3550-x5670), or custom (power_curve)",
        choices=MODELS,
    ),
    "power_curve": Field("any", (), "with power_model = custom: watts at 0, 10, ..., 100 % CPU (11 numbers)"),
    # power states of a host with no VM (docs/simulator.md, "Host power states")
    "sleep_power": Field("float", 8.0, "power asleep (ACPI S3, suspend to RAM), W", lo=0),
    "sleep_wake_time": Field("duration", 5.0, "time to wake from sleep", lo=0),
    "off_power": Field("float", 5.0, "power switched off (ACPI S5, wake-on-LAN armed), W", lo=0),
    "off_wake_time": Field("duration", 180.0, "time to boot from off to a running hypervisor", lo=0),
    "wake_power": Field("float", 0.0, "power while waking, W (0: the host's full-load power)", lo=0),
    "nic": Field("table", {}, "the physical NIC: bandwidth, sriov, max_vfs"),
}

STORAGE_FIELDS = {
    "name": Field("str", REQUIRED, "storage server name"),
    "device": Field("str", "ssd", "device model", choices=("ssd", "disk-array")),
    "parallelism": Field("int", 0, "IOs served at once (0: 8 for both models)", lo=0),
    "access_time": Field("duration", 0.0, "per-IO access time of random IO (0: 100 us SSD, 8 ms disk)", lo=0),
    "sequential_access_time": Field(
        "duration", 0.0, "per-IO time of sequential IO: read-ahead, no seek (0: 20 us SSD, 0.1 ms disk)", lo=0
    ),
    "bandwidth": Field("bandwidth", 0.0, "media transfer rate (0: 4 Gb/s SSD, 1.2 Gb/s per disk)", lo=0),
    "write_access_time": Field("duration", 0.0, "per-IO access time of a random write (0: as access_time)", lo=0),
    "write_bandwidth": Field("bandwidth", 0.0, "media transfer rate of writes (0: as bandwidth)", lo=0),
    "service_cv": Field(
        "float", 1.0, "coefficient of variation of a request's service time (1: exponential, as M/M/1)", lo=0
    ),
    "variability": Field("float", 0.0, "coefficient of variation of the device's speed over time (0: steady)", lo=0),
    "variability_time": Field("duration", 1.0, "correlation time of the device's speed variation", lo=0, lo_open=True),
    "link_speed": Field("bandwidth", 40e9, "the server's link into the fabric", lo=0, lo_open=True),
    "stripe": Field(
        "size", 0.0, "RAID 0 stripe unit: a random request spanning k units busies k disks (0: not striped)", lo=0
    ),
}

VM_FIELDS = {
    "name": Field("str", REQUIRED, "VM name; with count, a pattern with {i} (1-based)"),
    "count": Field("int", 1, "how many VMs this entry makes (0: none, e.g. at one end of a sweep)", lo=0),
    "start": Field("int", 1, "the first {i} of a counted entry", lo=0),
    "files": Field(
        "str",
        "",
        "one VM per trace file of this directory or .tar.gz (sorted by name; relative to the scenario), "
        "instead of count; {i} is the file's place",
    ),
    "block": Field(
        "str",
        "1/1",
        "with files: 'K/N', the K-th of N contiguous blocks of ceil(files / N) files (CloudSim's VM types)",
    ),
    "reserve": Field(
        "str",
        "memory",
        "with host auto, first-fit or random: what the VM must find free where it is placed at creation, its "
        "memory, or memory-and-cpu (also its vCPUs x MIPS among the MIPS the host's cores have not given to "
        "VMs placed before, on a core at least as fast, as CloudSim reserves a new VM's full MIPS)",
        choices=("memory", "memory-and-cpu"),
    ),
    "host": Field(
        "str",
        "auto",
        "initial host, 'auto' (round-robin over hosts with room), 'first-fit' (the first host with room) or "
        "'random' (seeded, with room)",
    ),
    "vcpus": Field("int", 1, "virtual CPUs", lo=1),
    "memory": Field("memory", 1024.0, "memory (1 GiB by default)", lo=1),
    "disk": Field("size", 10 * 1024**3, "disk size", lo=0),
    "nic": Field("str", "vnic", "starting NIC mode: para-virtual vNIC or SR-IOV VF", choices=("vnic", "vf")),
    "vf_rate": Field("bandwidth", 0.0, "rate cap of the VF if it starts with one (0: none)", lo=0),
    "weight": Field("int", 256, "CPU scheduler weight (shares)", lo=1),
    "cap": Field("float", 0.0, "CPU cap in cores (0: no cap)", lo=0),
    "storage": Field("str", "", "storage server holding its disk ('' : the first one)"),
    "dirty_rate": Field("size", 5e6, "memory dirtied per second by the guest (bytes/s), for migration", lo=0),
    "wss": Field("memory", 0.0, "writable working set that caps a pre-copy round (0: all memory)", lo=0),
    "mips": Field("float", 0.0, "MIPS per vCPU at 100 % (0: a whole host core, whatever its speed)", lo=0),
    "arrive": Field(
        "duration",
        0.0,
        "when the VM is created (0: there from the start); one that comes later with host 'auto' is placed "
        "then by the profile's admission policy",
        lo=0,
    ),
    "depart": Field("duration", 0.0, "when the VM is deleted (0: it stays to the end)", lo=0),
    "from_trace": Field(
        "bool",
        False,
        "vCPUs and memory come from its azure, opendc or bitbrains workload's trace, and arrival and departure "
        "from an azure or opendc one (a bitbrains VM lives the whole run); placed by the admission policy "
        "when it arrives (host 'auto') or on its named host",
    ),
}

WORKLOAD_FIELDS = {
    "vm": Field("str", REQUIRED, "VM that runs it: a name or a glob pattern ('web*')"),
    "kind": Field("str", REQUIRED, "what runs", choices=WORKLOAD_KINDS),
    "stagger": Field("bool", True, "start each VM's duty cycle at a random (seeded) point of its period"),
    "memory_used": Field(
        "memory", 0.0, "guest memory this workload keeps in use (0: not stated; a trace's own column wins)", lo=0
    ),
}

PROFILE_FIELDS = {
    "policies": Field("list[str]", [], "policies to run, by registered name"),
    "mode": Field("str", "auto", "executor mode", choices=MODES),
    "params": Field("table", {}, "per-policy parameters: [profiles.NAME.params.POLICY]"),
    "admission": Field(
        "str", "first-fit", "admission policy placing VMs that arrive without a host: first-fit or cloudscope"
    ),
    "simulator": Field(
        "table", {}, "[simulator] keys this profile runs with instead (e.g. power_follows_load = false for NPA)"
    ),
}

CONTROL_FIELDS = {
    "monitor_period": Field("duration", 1.0, "how often sensors are read", lo=0, lo_open=True),
    "history": Field("duration", 600.0, "how far back the Knowledge keeps snapshots", lo=0, lo_open=True),
    "max_migrations_per_host": Field("int", 1, "concurrent migrations touching one host", lo=1),
    "max_migrations_cluster": Field("int", 4, "concurrent migrations in the whole cluster", lo=1),
    "hold_down": Field("duration", 300.0, "a migrated VM is not moved again for this long", lo=0),
    "action_timeout": Field("duration", 600.0, "a running action is cancelled after this long", lo=0, lo_open=True),
    "approval_timeout": Field("duration", 300.0, "approve mode: plans expire unapproved after this", lo=0),
    "cpu_headroom": Field("float", 0.9, "a migration must leave the destination under this CPU load", lo=0, hi=1),
    "failure_grace": Field(
        "duration",
        30.0,
        "a host silent this long is declared failed and its VMs restarted elsewhere",
        lo=0,
        lo_open=True,
    ),
}

OUTPUT_FIELDS = {
    "csv": Field(
        "bool",
        False,
        "also write each profile's metrics as metrics-PROFILE.csv, and trials.csv (metrics.parquet always)",
    ),
    "per_vm": Field("bool", False, "also write per-VM metrics per step (large for big scenarios)"),
    "plots": Field("bool", True, "write PNG plots and embed them in report.html"),
    "sample_every": Field("duration", 0.0, "metrics row interval (0: every step)", lo=0),
    "intensity": Field("bool", False, "report IF, NF, io_degree and net_degree of every VM over the whole run"),
    "groups": Field(
        "table",
        {},
        'per-VM means of named groups of VMs, e.g. { std-disk = "x-disk*" }: CPU, block and network rates, '
        "batch job and HTTP response times",
    ),
    "measure_from": Field(
        "duration",
        0.0,
        "the summary's energy and SLA metrics (SLATAH, PDM) count from this time, rounded to a step (CloudSim "
        "3.0.3 counts from its first update, 300.1 s)",
        lo=0,
    ),
    "measure_to": Field(
        "duration",
        0.0,
        "... and up to this time (0: the end; CloudSim 3.0.3 stops at its last update, 86100.1 s of a day)",
        lo=0,
    ),
    "interference": Field(
        "duration",
        0.0,
        "report every VM's predicted V-slowdown (CloudScope Eq. 7) from the counters of this last stretch of "
        "the run, e.g. 60 (0: none)",
        lo=0,
    ),
}

SLO_FIELDS = {
    "vm": Field("str", REQUIRED, "the VM (a name or a glob such as 'web*')"),
    "throughput": Field("any", None, "[lower, upper] IOPS of the throughput target (reservation, limit)"),
    "io_size": Field("any", None, "[lower, upper] of the request-merge limit, sizes such as '12KB'"),
    "sc_rate": Field("any", [0.0, 100.0], "[lower, upper] per cent of the acceptable SLO compliance rate"),
    "pf_ratio": Field("any", [0.0, 100.0], "[lower, upper] per cent of the acceptable performance fluctuation"),
    "ramp_step": Field(
        "float",
        0.0,
        "raise the throughput target by this many IOPS every ramp_every, from its lower bound (0: no ramp)",
        lo=0,
    ),
    "ramp_every": Field("duration", 3.0, "how often the ramp raises the target", lo=0, lo_open=True),
    "ramp_repeat": Field("bool", False, "once the target reaches the upper bound, start again from the lower"),
    "latency": Field(
        "duration", 0.0, "mean IO latency each second should stay within (0: none), held by Façade in `see`", lo=0
    ),
}

TRIALS_FIELDS = {
    "count": Field("int", 25, "random initial placements, each a trial (the paper: 25 or 50)", lo=1),
    "slots": Field("int", 4, "VMs a host may hold in the Random placements (the paper: 4)", lo=1),
    "warmup": Field("duration", 10.0, "seconds of each run left out of its measurement and outcome", lo=0),
    "iterations": Field("int", 1, "measure-optimize-run rounds per trial and algorithm (Fig. 6: 4)", lo=1),
}

SIMULATOR_FIELDS = {
    "protocol_efficiency": Field(
        "float", 1448 / 1538, "payload share of a link's bit rate (TCP/IPv4, 1500 MTU)", lo=0, hi=1, lo_open=True
    ),
    "packet_payload": Field("size", 1448.0, "payload bytes per packet (MSS)", lo=1),
    "dom0_cost_per_packet": Field("duration", 2.2e-6, "Dom0 CPU per packet crossing a netback", lo=0),
    "dom0_cost_per_byte": Field("duration", 0.1e-9, "Dom0 CPU per byte crossing a netback", lo=0),
    "dom0_vif_overhead": Field("float", 0.0016, "Dom0 cost grows this much per extra active vNIC", lo=0),
    "guest_cost_per_packet": Field("duration", 0.5e-6, "guest CPU per packet (TCP stack + driver)", lo=0),
    "guest_cost_per_byte": Field("duration", 0.25e-9, "guest CPU per byte", lo=0),
    "pv_latency": Field("duration", 30e-6, "latency added by each Dom0 crossing (event channel)", lo=0),
    "vf_latency": Field("duration", 5e-6, "latency added by a VF (DMA + interrupt)", lo=0),
    "idle_guest_cpu": Field("float", 0.005, "cores an idle guest uses (timer ticks)", lo=0),
    "sched_overhead": Field("float", 0.065, "slowdown per runnable vCPU per hardware thread above one", lo=0),
    "wake_wait": Field(
        "duration",
        WAKE_WAIT,
        "a request waking a guest waits this long once its host's other vCPUs fill the threads",
        lo=0,
    ),
    "wake_wait_over": Field(
        "duration", WAKE_WAIT_OVER, "and this much more per runnable vCPU per thread beyond (docs/simulator.md)", lo=0
    ),
    "blkback_cost_per_request": Field("duration", 50e-6, "xen hosts: Dom0 CPU per block request (blkback)", lo=0),
    "blkback_cost_per_byte": Field("duration", 0.5e-9, "xen hosts: Dom0 CPU per byte of block IO", lo=0),
    "grant_entries": Field("int", 128, "xen hosts: entries of the grant table the guests' block IO shares", lo=1),
    "grant_page": Field("size", 4096.0, "xen hosts: bytes one grant entry maps", lo=1),
    "grant_stall": Field(
        "duration", 2e-3, "xen hosts: wait of a request per refill of a full grant table (lock and update)", lo=0
    ),
    "io_noise": Field(
        "bool",
        True,
        "draw each storage epoch's completions around its mean (false: serve the mean, the fluid model)",
    ),
    "io_limiter": Field(
        "str",
        "qemu",
        "a VM's IO rate limiter: QEMU's throttle (a bucket of a tenth of a second of the limit, refilled by each "
        "new limit) or SASLO's time-stamp limiter (no burst); sim/io_throttle.py",
        choices=("qemu", "time-stamp"),
    ),
    "ht_yield": Field(
        "float",
        0.3,
        "what a second busy hyper-thread adds to its core's throughput (0: nothing, 1: a core)",
        lo=0,
        hi=1,
    ),
    "initial_placement": Field(
        "str",
        "scenario",
        "where the VMs there at the start run: where the scenario puts them, or least-power: each, in order, on "
        "the host whose power rises least with its MIPS and memory reserved (PABFD at creation, as CloudSim's "
        "power-aware policies create VMs)",
        choices=("scenario", "least-power"),
    ),
    "vm_memory": Field(
        "str",
        "held",
        "held: a running VM holds its memory, as on a real hypervisor; creation: memory counts only where VMs "
        "are placed at creation, and a running VM holds none, so migrations see CPU alone (CloudSim's "
        "UtilizationModelNull)",
        choices=("held", "creation"),
    ),
    "power_follows_load": Field(
        "bool",
        True,
        "a running host draws its power curve at its CPU load (false: its full-load power all the time, the "
        "non-power-aware reference of Beloglazov and Buyya)",
    ),
    "rate_limit_burst": Field("size", 65536.0, "token-bucket burst of a VF rate tier or vNIC limit", lo=0),
    "vf_attach_time": Field("duration", 0.2, "hot-plug of a VF", lo=0),
    "vf_detach_time": Field("duration", 1.5, "hot-unplug of a VF (device-removed event)", lo=0),
    "migration_model": Field(
        "str",
        "pre-copy",
        "pre-copy: QEMU's rounds over the network, as the migration_* keys below set them; cloudsim: CloudSim "
        "3.0.3's fixed delay (the VM's memory at half its destination's NIC bandwidth, off the network), the VM "
        "at 90 % of its CPU on its source and 10 % of it charged to its destination meanwhile",
        choices=("pre-copy", "cloudsim"),
    ),
    "migration_bandwidth": Field("bandwidth", 0.0, "cap of a migration stream (0: unlimited, as libvirt)", lo=0),
    "migration_downtime_limit": Field("duration", 0.3, "stop pre-copy when the rest fits in this (QEMU)", lo=0),
    "migration_max_rounds": Field("int", 0, "pre-copy round cap, then a forced stop-and-copy (0: none; Xen 29)", lo=0),
    "migration_max_factor": Field("float", 0.0, "forced stop-and-copy past this times memory (0: none; Xen 3)", lo=0),
    "migration_resume_time": Field("duration", 0.02, "time to resume the VM at the destination", lo=0),
    "migration_auto_converge": Field("bool", False, "throttle a guest that dirties memory faster than it moves"),
    "migration_throttle_initial": Field("float", 0.2, "auto-converge: first vCPU throttle", lo=0.01, hi=0.99),
    "migration_throttle_increment": Field("float", 0.1, "auto-converge: throttle added each time", lo=0.01, hi=0.99),
    "migration_postcopy": Field("bool", False, "switch to post-copy after the first pre-copy pass"),
    "migration_timeout": Field("duration", 0.0, "pre-copy time before timeout_action (0: none, as libvirt)", lo=0),
    "migration_timeout_action": Field(
        "str", "abort", "at the timeout: abort, suspend (stop-and-copy) or postcopy", choices=TIMEOUT_ACTIONS
    ),
    "migration_failure_rate": Field(
        "float",
        0.0,
        "a fault: the share of migrations that fail once their first pass is sent (a dropped connection); "
        "the VM stays on its source",
        lo=0,
        hi=1,
    ),
    "storage_step": Field(
        "duration",
        0.0,
        "period of the storage subsystem (IO queues, rate limiters, devices), e.g. 0.025 for 25 ms epochs; "
        "it divides the step, and the loop then ticks at it (0: the step)",
        lo=0,
    ),
}
