"""GPU cost of one sampling step (uncommitted measurement script)."""
import json, os, sys, time
import torch
sys.path.insert(0, os.getcwd())
from app.engine.local import samplers
from app.engine.local.generation import SamplingParams
V = 128256
logits = (torch.randn(V, device="cuda") * 3)
seen = samplers.seen_mask(list(range(0, 4000, 3)), logits)
g = torch.Generator(device="cuda").manual_seed(0)
cases = {
 "greedy": SamplingParams(temperature=0),
 "greedy+rep1.1": SamplingParams(temperature=0, repetition_penalty=1.1),
 "default T0.7 top_p0.95": SamplingParams(),
 "T0.7 top_p1 (no sort)": SamplingParams(top_p=1.0),
 "top_k40 only": SamplingParams(top_p=1.0, top_k=40),
 "min_p0.05 only": SamplingParams(top_p=1.0, min_p=0.05),
 "all: k40 p0.95 minp0.05 rep1.1": SamplingParams(top_k=40, min_p=0.05, repetition_penalty=1.1),
}
out = {}
for name, p in cases.items():
    s = seen if p.repetition_penalty != 1.0 else None
    for _ in range(20): samplers.sample(logits, p, g, s)
    torch.cuda.synchronize()
    n = 500
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    t0 = time.perf_counter(); start.record()
    for _ in range(n): samplers.sample(logits, p, g, s)
    end.record(); host = (time.perf_counter() - t0) / n
    torch.cuda.synchronize()
    gpu = start.elapsed_time(end) / n
    out[name] = {"gpu_ms_per_token": round(gpu, 4), "host_launch_ms_per_token": round(host * 1e3, 4)}
    print(f"{name:34s} gpu {gpu*1e3:8.1f} us/token  host launch {host*1e6:8.1f} us/token")
print(torch.__version__, torch.cuda.get_device_name())
os.makedirs(os.environ.get("OUT", "/tmp"), exist_ok=True)
json.dump(out, open(os.path.join(os.environ.get("OUT", "/tmp"), "samplers_gpu.json"), "w"), indent=1)
