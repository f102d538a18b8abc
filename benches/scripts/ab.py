# Usage: python3 benches/scripts/ab.py BIN_A BIN_B ROUNDS [proteus-bench options...]
# Paired A/B of proteus-bench: A and B alternate, ROUNDS rounds; per round each reports its
# median per (scenario, store); prints the medians of A and B and the median of the paired
# ratios B/A, with the load average.
import json, subprocess, statistics, sys
A, B, rounds = sys.argv[1], sys.argv[2], int(sys.argv[3])
args = sys.argv[4:]
res = {}
loads = []
for r in range(rounds):
    for name, binary in (("A", A), ("B", B)) if r % 2 == 0 else (("B", B), ("A", A)):
        out = subprocess.run([binary, "--json", *args], capture_output=True, text=True).stdout
        for line in out.splitlines():
            d = json.loads(line)
            res.setdefault((d["scenario"], d["store"]), {}).setdefault(name, []).append(d["median_ms"])
    loads.append(open("/proc/loadavg").read().split()[0])
for key, v in res.items():
    ratios = [b / a for a, b in zip(v["A"], v["B"])]
    print(f"{key[0]:10} {key[1]:13} A {statistics.median(v['A']):8.3f} ms  B {statistics.median(v['B']):8.3f} ms  B/A paired median {statistics.median(ratios):.3f} (min {min(ratios):.3f}, max {max(ratios):.3f})")
print("load", " ".join(loads))
