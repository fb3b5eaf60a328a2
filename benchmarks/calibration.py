"""Print the simulator's calibration against the papers' measurements (the table in docs/simulator.md).

Usage: python benchmarks/calibration.py
"""

from __future__ import annotations

from sova.experiments import calibration as cal


def main() -> None:
    print("SR-IOV paper 5.4 / Fig. 7c: aggregate netperf goodput through one 10 GbE port (Gb/s)")
    print("| VMs | vNIC | paper vNIC | error | VF | paper VF | error |\n|---:|---:|---:|---:|---:|---:|---:|")
    paper = {63: (9.01804, 9.42892)}  # the only numbers the paper's text gives
    for n in (1, 16, 32, 40, 48, 56, 63):
        vnic, vf = (cal.netperf_throughput(n, nic) / 1e9 for nic in ("vnic", "vf"))
        ref = paper.get(n)
        cells = [f"{vnic:.3f}", f"{ref[0]:.3f}" if ref else "", f"{vnic / ref[0] - 1:+.2%}" if ref else ""]
        cells += [f"{vf:.3f}", f"{ref[1]:.3f}" if ref else "", f"{vf / ref[1] - 1:+.2%}" if ref else ""]
        print(f"| {n} | " + " | ".join(cells) + " |")
    print("\nSova paper Fig. 2: mean response time (ms) at 2,500 requests/s")
    print("| page | co-located vNIC | two hosts vNIC | co-located VF | two hosts VF |\n|---|---:|---:|---:|---:|")
    for page in ("4KB", "16KB", "64KB", "128KB", "256KB"):
        cells = [cal.web_response_time(page, c, n) * 1e3 for n in ("vnic", "vf") for c in (True, False)]
        print(f"| {page} | " + " | ".join(f"{c:.2f}" for c in cells) + " |")
    print("\nCloudScope Fig. 2a: job completion time relative to one VM (4 vCPUs, half a core each, 32 threads)")
    base = cal.cpu_job_time(1)
    print("| VMs | slowdown |\n|---:|---:|")
    for n in (1, 5, 15, 25, 35, 45):
        print(f"| {n} | {cal.cpu_job_time(n) / base:.2f} |")


if __name__ == "__main__":
    main()
