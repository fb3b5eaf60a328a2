#!/usr/bin/env bash
# Reference numbers from CloudSim 3.0.3 itself for the PlanetLab consolidation study
# (Beloglazov & Buyya, CCPE 24(13) 2012): the 22 configurations of CloudSim's examples
# (org.cloudbus.cloudsim.examples.power.planetlab), run unchanged, one JVM at a time, per day.
# Writes one CSV row per (day, profile), profiles named as Sova names them; see docs/cloudsim-reference.md.
#
# Usage: benchmarks/cloudsim_reference.sh [-g CLOUDSIM_GIT_DIR] [-o CSV] [-w WORK_DIR] [-s HH:MM] [-q] [-k] [-r]
#                                          CHECKOUT_DIR TRACES_DIR DAY...
#   -g  git dir of Cloudslab/cloudsim: if CHECKOUT_DIR does not exist, tag cloudsim-3.0.3 is exported there
#   -o  output CSV (default: benchmarks/data/cloudsim-3.0.3-planetlab.csv beside this script)
#   -w  scratch dir for logs and the classpath folder NPA reads (default: CHECKOUT_DIR-run)
#   -s  UTC time (HH:MM) after which no new run is started; a day is written whole or not at all
#   -q  CloudSim's event log off (PlanetLabRunnerConsole enableOutput != "1"; the results are still printed,
#       as printResults re-enables the log). Default on, as the example classes run (~0.5 GB of log a run).
#       Column cloudsim_log says which. NPA (the NonPowerAware class, ENABLE_OUTPUT constant) always logs.
#   -k  keep CloudSim's full logs (default: keep their last 60 lines, which hold the printed results)
#   -r  resume: keep the rows a day stopped by -s already has in WORK_DIR/out/<DAY>/rows.csv, run the rest
#   TRACES_DIR holds <DAY>/ folders, one trace file per VM (CloudSim's workload/planetlab/<DAY>).
# Example: benchmarks/cloudsim_reference.sh -g /work/.mirror/Cloudslab+cloudsim/repo -w /work/cloudsim-run \
#            /work/cloudsim-3.0.3 /work/shared/traces/planetlab 20110303 20110306
#
# As run for data/cloudsim-3.0.3-planetlab.csv (2026-11-27, OpenJDK 17.0.15, Maven 3.8.7, 2 shared cores):
#   day 20110303 with the log on (an earlier revision of this script, without others_cpu_s: left empty);
#   -q -s 11:25 20110306 20110309 ... (20110309 stopped by -s after 19 of 22 runs, so not written); then
#   -q -r -s 14:30 -w /work/cloudsim-run /work/cloudsim-3.0.3 /work/shared/traces/planetlab 20110309 20110322
#   20110325 20110403 20110409 20110411 20110412 20110420 (20110309's first 19 rows kept from the first run).
# Caveats (CloudSim's behaviour, not ours): VMs take trace files in File.listFiles() order (directory
# order, unsorted), so results depend on the filesystem; *-rs profiles use an unseeded java.util.Random.
set -euo pipefail

TAG=cloudsim-3.0.3
GIT_DIR="" ; CSV="$(cd "$(dirname "$0")" && pwd)/data/cloudsim-3.0.3-planetlab.csv" ; WORK="" ; STOP_AT=""
LOG_ON=1 ; KEEP=0 ; RESUME=0
while getopts g:o:w:s:qkr opt; do
  case $opt in g) GIT_DIR=$OPTARG ;; o) CSV=$OPTARG ;; w) WORK=$OPTARG ;; s) STOP_AT=$OPTARG ;;
               q) LOG_ON=0 ;; k) KEEP=1 ;; r) RESUME=1 ;; *) exit 2 ;; esac
done
shift $((OPTIND - 1))
[ $# -ge 3 ] || { sed -n '7,18p' "$0"; exit 2; }
CS=$(realpath -m "$1"); TRACES=$(realpath "$2"); shift 2; DAYS=("$@")
WORK=$(realpath -m "${WORK:-$CS-run}")

# 1. Checkout: the tag's tree, exported without a work tree of the mirror.
if [ ! -d "$CS" ]; then
  [ -n "$GIT_DIR" ] || { echo "no $CS and no -g GIT_DIR" >&2; exit 2; }
  mkdir -p "$CS"
  git --git-dir="$GIT_DIR" archive "$TAG" | tar -x -C "$CS"
fi

# 2. Build modules cloudsim + cloudsim-examples, tests skipped. Overrides for JDK 17 (the only JDK here):
#    - modules/pom.xml sets maven-compiler-plugin <source>/<target> 1.6, which javac 17 rejects; set 1.7
#      (the value the root POM's pluginManagement already gives). The only edit to CloudSim's files.
#    - maven-javadoc-plugin 2.8 (bound to prepare-package in modules/cloudsim) skipped: -Dmaven.javadoc.skip=true.
CS_JAR=$CS/modules/cloudsim/target/cloudsim-3.0.3.jar
EX_JAR=$CS/modules/cloudsim-examples/target/cloudsim-examples-3.0.3.jar
MATH_JAR=${M2_REPO:-$HOME/.m2/repository}/org/apache/commons/commons-math3/3.0/commons-math3-3.0.jar
if [ ! -f "$CS_JAR" ] || [ ! -f "$EX_JAR" ]; then
  sed -i 's#<source>1.6</source>#<source>1.7</source>#; s#<target>1.6</target>#<target>1.7</target>#' "$CS/modules/pom.xml"
  (cd "$CS/modules" && mvn -B -DskipTests -Dmaven.javadoc.skip=true package)
fi

# 3. Profiles: Sova name -> PlanetLabRunnerConsole arguments (policy selection parameter), as the example
#    classes ThrMmt ... LrrRs and Dvfs set them. NPA is the NonPowerAware example class itself.
PROFILES=(npa dvfs)
for pol in thr:0.8 iqr:1.5 mad:2.5 lr:1.2 lrr:1.2; do
  for sel in mmt mc mu rs; do PROFILES+=("${pol%%:*}-$sel-${pol#*:}"); done
done

HEADER="day,profile,vms,hosts,energy_kwh,migrations,slatah_pct,pdm_pct,slav,esv,host_shutdowns,wall_s,cpu_s"
HEADER+=",sla_pct,overall_sla_violation_pct,average_sla_violation_pct,sim_time_s,received_cloudlets"
HEADER+=",mean_time_before_host_shutdown_s,stdev_time_before_host_shutdown_s"
HEADER+=",mean_time_before_vm_migration_s,stdev_time_before_vm_migration_s"
HEADER+=",exec_vm_selection_mean_s,exec_vm_selection_stdev_s,exec_host_selection_mean_s,exec_host_selection_stdev_s"
HEADER+=",exec_vm_reallocation_mean_s,exec_vm_reallocation_stdev_s,exec_total_mean_s,exec_total_stdev_s,max_rss_kb"
HEADER+=",cloudsim_log,others_cpu_s"

# CPU time the whole machine spent busy (all processes), in jiffies, from /proc/stat.
busy() { awk '/^cpu /{ print $2 + $3 + $4 + $7 + $8 + $9 }' /proc/stat; }

# Turns CloudSim's printed results (Helper.printResults) + /usr/bin/time output into one CSV row.
# slav = printed "SLA" (SLATAH x PDM) as a fraction; esv = energy_kwh x slav (CloudSim prints no ESV).
# others_cpu_s = CPU time used by other processes during the run (the machine may be shared: wall_s and
# cpu_s are only comparable between runs where it is small).
row() { # day profile log timefile cloudsim_log busy_jiffies_during_run
  awk -v day="$1" -v prof="$2" -v lg="$5" -v busy="$6" -v hz="$(getconf CLK_TCK)" -F': ' '
    function num(s) { sub(/ *(kWh|sec|%)$/, "", s); return s }
    FILENAME == ARGV[2] { if ($0 ~ /^[0-9.]+ [0-9.]+ [0-9.]+ [0-9]+$/) { split($0, t, " "); wall = t[1]; cpu = t[2] + t[3]; rss = t[4] }; next }
    /^Received [0-9]+ cloudlets/ { split($0, r, " "); m["rc"] = r[2] }
    /^Number of hosts: /                       { m["hosts"] = num($2) }
    /^Number of VMs: /                         { m["vms"] = num($2) }
    /^Total simulation time: /                 { m["sim"] = num($2) }
    /^Energy consumption: /                    { m["e"] = num($2) }
    /^Number of VM migrations: /               { m["mig"] = num($2) }
    /^SLA: /                                   { m["sla"] = num($2) }
    /^SLA perf degradation due to migration: / { m["pdm"] = num($2) }
    /^SLA time per active host: /              { m["slatah"] = num($2) }
    /^Overall SLA violation: /                 { m["ov"] = num($2) }
    /^Average SLA violation: /                 { m["av"] = num($2) }
    /^Number of host shutdowns: /              { m["sd"] = num($2) }
    /^Mean time before a host shutdown: /      { m["mhs"] = num($2) }
    /^StDev time before a host shutdown: /     { m["shs"] = num($2) }
    /^Mean time before a VM migration: /       { m["mvm"] = num($2) }
    /^StDev time before a VM migration: /      { m["svm"] = num($2) }
    /^Execution time - VM selection mean: /    { m["x1"] = num($2) }
    /^Execution time - VM selection stDev: /   { m["x2"] = num($2) }
    /^Execution time - host selection mean: /  { m["x3"] = num($2) }
    /^Execution time - host selection stDev: / { m["x4"] = num($2) }
    /^Execution time - VM reallocation mean: / { m["x5"] = num($2) }
    /^Execution time - VM reallocation stDev: /{ m["x6"] = num($2) }
    /^Execution time - total mean: /           { m["x7"] = num($2) }
    /^Execution time - total stDev: /          { m["x8"] = num($2) }
    END {
      if (m["e"] == "") { print "no results in log for " day " " prof > "/dev/stderr"; exit 1 }
      slav = m["sla"] / 100
      printf "%s,%s,%s,%s,%s,%s,%s,%s,%.7g,%.7g,%s,%s,%.2f", day, prof, m["vms"], m["hosts"], m["e"], m["mig"],
             m["slatah"], m["pdm"], slav, m["e"] * slav, m["sd"], wall, cpu
      printf ",%s,%s,%s,%s,%s,%s,%s,%s,%s", m["sla"], m["ov"], m["av"], m["sim"], m["rc"], m["mhs"], m["shs"], m["mvm"], m["svm"]
      printf ",%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%.2f\n", m["x1"], m["x2"], m["x3"], m["x4"], m["x5"], m["x6"], m["x7"], m["x8"], rss, lg, busy / hz - cpu
    }' "$3" "$4"
}

mkdir -p "$WORK" "$(dirname "$CSV")"
java -version 2>"$WORK/java-version.txt"
for day in "${DAYS[@]}"; do
  out=$WORK/out/$day; mkdir -p "$out/console" "$out/res/workload/planetlab"
  # The order CloudSim's File.listFiles() sees (readdir order) decides which trace each VM id/type gets.
  ls -U "$TRACES/$day" > "$out/listfiles-order.txt"
  # NonPowerAware reads classpath resource workload/planetlab/20110303 (hard-coded): a folder put first on
  # the classpath maps that name to this day's traces.
  ln -sfn "$TRACES/$day" "$out/res/workload/planetlab/20110303"
  CP="$out/res:$CS_JAR:$EX_JAR:$MATH_JAR"
  rows=$out/rows.csv; [ "$RESUME" = 1 ] && [ -f "$rows" ] || : > "$rows"
  for prof in "${PROFILES[@]}"; do
    if grep -q "^$day,$prof," "$rows"; then echo "$day $prof: kept from an earlier run"; continue; fi
    if [ -n "$STOP_AT" ] && [[ "$(date -u +%H:%M)" > "$STOP_AT" ]]; then
      echo "past $STOP_AT UTC: stopping before $day $prof; $day not written"; exit 0
    fi
    log=$out/console/$prof.txt; tf=$out/console/$prof.time
    lg=$LOG_ON
    if [ "$prof" = npa ]; then
      lg=1; cmd=(java -cp "$CP" org.cloudbus.cloudsim.examples.power.planetlab.NonPowerAware)
    else # PlanetLabRunnerConsole <enableOutput> <inputFolder> <outputFolder> <workload> <policy> [selection] [param]
      IFS=- read -r pol sel par <<<"$prof"
      cmd=(java -cp "$CP" org.cloudbus.cloudsim.examples.power.planetlab.PlanetLabRunnerConsole
           "$LOG_ON" "$TRACES" "$out" "$day" "$pol" "${sel:-}" "${par:-}")
    fi
    echo "$(date -u +%T) $day $prof: ${cmd[*]}"
    b0=$(busy)
    (cd "$out" && /usr/bin/time -f '%e %U %S %M' -o "$tf" "${cmd[@]}" > "$log" 2>&1)
    b1=$(busy)
    # With the log on, Console runs write CloudSim's log (events + results) to <out>/log/<experiment>.txt;
    # NPA, and Console runs with the log off, print to stdout.
    res=$log
    if [ "$prof" != npa ] && [ "$LOG_ON" = 1 ]; then
      exp=$(sed -n 's/^Starting //p' "$log" | head -1)
      res=$out/log/$exp.txt
    fi
    row "$day" "$prof" "$res" "$tf" "$lg" $((b1 - b0)) >> "$rows"
    if [ "$KEEP" = 0 ] && [ "$lg" = 1 ]; then tail -n 60 "$res" > "$res.tail"; mv "$res.tail" "$res"; fi
    tail -1 "$rows"
  done
  # Append the whole day atomically (any earlier rows of this day are replaced).
  tmp=$(mktemp "$CSV.XXXXXX")
  { echo "$HEADER"; [ -f "$CSV" ] && tail -n +2 "$CSV" | awk -F, -v d="$day" '$1 != d'; cat "$rows"; } > "$tmp"
  chmod 644 "$tmp"; mv "$tmp" "$CSV"
  echo "$(date -u +%T) $day written to $CSV"
done
