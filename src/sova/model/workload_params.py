"""Each workload kind's parameters (``[[workloads]]`` keys beyond vm and kind), with kind, default, range
and a line of documentation; a part of the scenario's keys (``model/scenario_fields``)."""

from __future__ import annotations

from sova.model.schema import MAX_SEED, REQUIRED, Field
from sova.model.trace_sets import ORDERS

# how a trace's samples map onto simulated time (planetlab, bitbrains)
TRACE_SAMPLING = {
    "interval": Field("duration", 300.0, "seconds per sample", lo=0, lo_open=True),
    "offset": Field("duration", 0.0, "start this far into the trace", lo=0),
    "draw": Field(
        "str",
        "in-order",
        "a set's traces for the entry's VMs: one each in name order, or drawn with replacement (seeded by "
        "draw_seed), for more VMs than traces",
        choices=("in-order", "with-replacement"),
    ),
    "draw_seed": Field("int", 1, "with draw = with-replacement: the draws' seed", lo=0, hi=MAX_SEED),
    "order": Field(
        "str",
        "name",
        "which VM gets which trace of a set: the k-th VM the k-th sorted by name, or the k-th the file "
        "system lists (listing: CloudSim's, which varies between file systems)",
        choices=ORDERS,
    ),
}

# Per workload kind: the parameters a phase may change, with defaults.
WORKLOAD_PARAMS: dict[str, dict[str, Field]] = {
    "lookbusy": {
        "duty": Field("float", 1.0, "fraction of the time the burner runs", lo=0, hi=1),
        "util": Field("float", 1.0, "CPU load of each vCPU while running", lo=0, hi=1),
        "period": Field("duration", 10.0, "on/off period of the duty cycle", lo=0, lo_open=True),
    },
    "netperf": {
        "duty": Field("float", 1.0, "fraction of the time the stream runs", lo=0, hi=1),
        "rate": Field("bandwidth", 0.0, "offered rate while running (0: as fast as TCP goes)", lo=0),
        "period": Field("duration", 10.0, "on/off period of the duty cycle", lo=0, lo_open=True),
        "peer": Field(
            "str", "external", "the other end: a VM name, 'external', or a pattern like 'cli{i}' (i: own number)"
        ),
        "direction": Field("str", "tx", "tx: the VM sends; rx: it receives", choices=("tx", "rx")),
    },
    "httperf": {
        "client": Field("str", "external", "request source: a VM name, 'external', or a pattern like 'cli{i}'"),
        "rate": Field("float", 100.0, "requests per second", lo=0),
        "page": Field("size", 10240.0, "response size", lo=1),
        "request": Field("size", 300.0, "request size", lo=1),
        "cpu_per_request": Field("duration", 50e-6, "server CPU time per request", lo=0),
        "timeout": Field("duration", 5.0, "client timeout; slower requests count as errors", lo=0, lo_open=True),
    },
    "web": {
        "web": Field("str", REQUIRED, "web VMs this client sends to: a name, a glob ('s1-web*') or 'web{i}'"),
        "cache": Field("str", "", "cache VMs each web request calls, a name or glob ('' : none)"),
        "concurrency": Field("int", 20, "requests the client keeps outstanding", lo=1),
        "request": Field("size", 750.0, "request size, client to web", lo=1),
        "page": Field("size", 33660.0, "response size, web to client", lo=1),
        "calls": Field("int", 10, "sequential cache requests per web request, to random cache VMs", lo=0),
        "call_request": Field("size", 100.0, "cache request size", lo=1),
        "call_response": Field("size", 500.0, "cache response size", lo=1),
        "cpu_per_request": Field("duration", 1e-3, "web VM CPU time per request", lo=0),
        "cpu_per_call": Field("duration", 20e-6, "cache VM CPU time per call", lo=0),
    },
    "mapreduce": {
        "map": Field("float", 60.0, "map work of a VM (or of one map task with mappers), core-seconds", lo=0),
        "shuffle": Field("size", 100e6, "bytes each VM sends in the shuffle, evenly to the job's other VMs", lo=0),
        "reduce": Field("float", 30.0, "reduce work of a VM (or of one reduce task with reducers), core-seconds", lo=0),
        "cores": Field("float", 0.0, "cores a VM keeps busy in map and reduce (0: all vCPUs)", lo=0),
        "think": Field("duration", 10.0, "pause between runs of the job (tear-down and set-up)", lo=0),
        "mappers": Field(
            "int", 0, "map tasks of the job, spread round-robin over its VMs, one core each (0: one per VM)", lo=0
        ),
        "reducers": Field("int", 0, "reduce tasks of the job, as mappers (0: one per VM)", lo=0),
        "map_read": Field("size", 0.0, "bytes a map task reads from its VM's disk (its input split)", lo=0),
        "reduce_write": Field("size", 0.0, "bytes a reduce task writes to its VM's disk (its output)", lo=0),
        "io_size": Field("size", 65536.0, "bytes per disk request of map reads and reduce writes", lo=512),
    },
    "sysbench": {
        "prime": Field(
            "int",
            3000,
            "--cpu-max-prime: 2000, 3000 or 5000 (each vCPU 20, 50 or 90 % busy)",
            choices=(2000, 3000, 5000),
        ),
        "threads": Field("int", 4, "threads of a job (at most the VM's vCPUs run)", lo=1),
        "seconds": Field("duration", 10.0, "a job's time alone on an idle host", lo=0, lo_open=True),
    },
    "fio": {
        "iops": Field("float", 100.0, "IO operations per second offered", lo=0),
        "pattern": Field(
            "str", "random", "random, or sequential (no seek: read-ahead serves it)", choices=("random", "sequential")
        ),
        "size": Field("size", 4096.0, "IO size", lo=512),
        "read": Field("float", 0.7, "fraction of reads", lo=0, hi=1),
        "iodepth": Field(
            "int", 0, "IOs kept outstanding, as fio's iodepth (0: open loop: IOs not served at once are dropped)", lo=0
        ),
    },
    "filebench": {
        "personality": Field(
            "str",
            "webserver",
            "the SASLO paper's Table 3: webserver, fileserver or varmail (the mail server)",
            choices=("webserver", "fileserver", "varmail"),
        ),
        "threads": Field("int", 0, "threads, each with one IO outstanding (0: Table 3's: 100, 50, 16)", lo=0),
        "filesize": Field("size", 0.0, "mean file size (0: Table 3's: 16 KB, 128 KB, 16 KB)", lo=0),
        "iosize": Field("size", 0.0, "IO size (0: Table 3's: 512 KB, 1 MB, 16 KB)", lo=0),
    },
    "block-trace": {
        "file": Field(
            "str",
            REQUIRED,
            "a block-IO trace file (plain, .gz or .bz2; its format: see format); relative to the scenario",
        ),
        "format": Field(
            "str",
            "auto",
            "cloudphysics (libCacheSim CSV), msr (MSR Cambridge), systor (SNIA SYSTOR'17), tencent (Tencent CBS), "
            "or auto: told by the file's first line",
            choices=("auto", "cloudphysics", "msr", "systor", "tencent"),
        ),
        "volume": Field(
            "int", -1, "the Tencent volume id, SYSTOR LUN or MSR disk number to replay (-1: the busiest)", lo=-1
        ),
        "pace": Field(
            "str",
            "own",
            "own: open loop at the trace's arrival times (times speed), looping at its end; fast: a closed "
            "loop of iodepth requests in the trace's order, as fast as the storage serves them",
            choices=("own", "fast"),
        ),
        "speed": Field(
            "float", 1.0, "own pace: trace seconds per simulated second (2: twice the rate)", lo=0, lo_open=True
        ),
        "iodepth": Field("int", 32, "fast pace: requests kept outstanding", lo=1),
        "start": Field(
            "duration",
            0.0,
            "where in the trace to begin (s); with stagger, an entry's VMs begin evenly spread over one loop after it",
            lo=0,
        ),
    },
    "transfer": {
        "size": Field("size", 1e9, "bytes to copy, once (scp of a file)", lo=1),
        "peer": Field("str", "external", "where the file goes: a VM name, 'external', or a pattern like 'srv{i}'"),
        "start": Field("duration", 0.0, "when the copy starts", lo=0),
        "cpu_per_byte": Field("duration", 4e-9, "sender CPU per byte on top of the network stack (scp's cipher)", lo=0),
    },
    "batch": {
        "work": Field("float", 60.0, "CPU work per job, core-seconds", lo=0, lo_open=True),
        "cores": Field("float", 0.0, "cores a running job keeps busy (0: all vCPUs)", lo=0),
        "think": Field("duration", 0.0, "pause between jobs", lo=0),
    },
    "planetlab": {
        "file": Field(
            "str",
            REQUIRED,
            "a PlanetLab per-VM file (288 CPU % samples), or a set: a directory or .tar.gz of them, one per VM "
            "the entry names, in name order; relative to the scenario",
        ),
        "scale": Field("float", 1.0, "multiplier on the trace's CPU %", lo=0),
        "leave": Field(
            "str",
            "never",
            "idle: the VM is deleted at the first sample after its first whose value and the next's are both "
            "0 (its last sample counted twice), as CloudSim 3.0.3 deletes a VM whose demand is 0 at an update",
            choices=("never", "idle"),
        ),
        "lead": Field(
            "duration",
            0.0,
            "play the trace this far ahead of the clock (its samples and leave stay on the clock): the step "
            "that ends at t plays the demand at t + lead - step, so a policy deciding at t sees the demand "
            "CloudSim's would decide on at t (CloudSim decides on the demand of the interval it is about to "
            "run; 300.1 s in the compatible study, whose updates fall 0.1 s after each sample)",
            lo=0,
        ),
        "interpolate": Field(
            "bool",
            False,
            "the demand between samples on a line from one to the next, the last sample held (CloudSim's "
            "UtilizationModelPlanetLabInMemory); false: each sample holds until the next",
        ),
        **TRACE_SAMPLING,
    },
    "bitbrains": {
        "file": Field(
            "str",
            REQUIRED,
            "a Bitbrains GWA-T-12 VM CSV, 'ARCHIVE.tar.gz:MEMBER', or a set (a directory or a whole .tar.gz: "
            "one trace per VM the entry names, in name order)",
        ),
        "scale": Field("float", 1.0, "multiplier on CPU, disk and network", lo=0),
        **TRACE_SAMPLING,
    },
}
_LIFETIME_TRACE = {
    "scale": Field("float", 1.0, "multiplier on the trace's CPU", lo=0),
}
WORKLOAD_PARAMS["azure"] = {
    "file": Field(
        "str",
        REQUIRED,
        "a directory with the Azure Public Dataset V1's vmtable.csv.gz and vm_cpu_readings-*.csv.gz; its VMs in "
        "order of creation map onto the entry's VMs in name order",
    ),
    **_LIFETIME_TRACE,
}
WORKLOAD_PARAMS["opendc"] = {
    "file": Field(
        "str",
        REQUIRED,
        "a directory with an OpenDC workload trace (tasks.parquet, fragments.parquet; schema v4); its VMs in "
        "order of submission map onto the entry's VMs in name order",
    ),
    **_LIFETIME_TRACE,
}
WORKLOAD_PARAMS["observed"] = {
    "file": Field(
        "str", REQUIRED, "an observed-demand Parquet file (`sova snapshot export` writes it beside the scenario)"
    ),
    "series": Field("str", "", "the VM's series in the file ('' : the one named as the VM itself)"),
    "replay": Field("bool", False, "start at the window's start (replay what was seen); false: where it ends"),
    "after": Field(
        "str",
        "last",
        "past the observed window: the last sample held, the window's mean, or the AR(1) model's expected value "
        "(mu + phi^k (last - mu), k samples on; the analyzers' forecast)",
        choices=("last", "mean", "ar"),
    ),
    "scale": Field("float", 1.0, "multiplier on CPU, disk and network (1.2: what if demand grew by a fifth)", lo=0),
}

STRUCTURAL_PARAMS = {
    "mappers",  # a job's tasks are dealt to its VMs once
    "reducers",
    "map_read",  # the VMs that do disk IO get their IO flows once
    "reduce_write",
    "peer",
    "direction",
    "client",
    "file",
    "series",
    "replay",
    "after",
    "interval",
    "offset",
    "start",
    # a web stream's bytes per request are fixed when its flows are tied together
    "web",
    "cache",
    "request",
    "page",
    "calls",
    "call_request",
    "call_response",
}
