#!/usr/bin/env python3
"""PyTorch inside a vgpu slice, for tests/gpu/run.sh (part `torch`) on a real GPU.

    python3 tests/gpu/torch_slice.py --expect-total BYTES [--seconds S]
    python3 tests/gpu/torch_slice.py --throughput-only [--seconds S]

Run under `vgpu run --memory 4GiB --cores 30 -- python3 tests/gpu/torch_slice.py
--expect-total 4294967296`, it checks what a PyTorch user meets in a slice:
  - torch.cuda.mem_get_info() reports the slice: its total is exactly BYTES, free at most that;
  - a small transformer's forward and backward passes and an optimizer step run;
  - allocating past the slice raises PyTorch's own torch.cuda.OutOfMemoryError ("CUDA out of
    memory"), after at most BYTES were handed out, and the process goes on: the memory freed
    afterwards can be allocated again.
Both modes print `throughput N` (matmuls per second over S seconds of a 4096 x 4096 bf16 matmul
loop), which run.sh compares with a run outside the slice to judge the compute share.
Prints "ok: ..." / "FAIL: ..." per check; exit 0 all passed, 1 a check failed, 77 skipped (no
PyTorch or no CUDA device), 2 bad usage.
"""
import argparse
import sys
import time


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--expect-total", type=int, help="the slice's memory in bytes")
    parser.add_argument("--seconds", type=float, default=5.0, help="matmul loop length")
    parser.add_argument("--throughput-only", action="store_true",
                        help="only the matmul loop (the baseline outside the slice)")
    args = parser.parse_args()
    if not args.throughput_only and not args.expect_total:
        parser.error("--expect-total BYTES is required (or --throughput-only)")
    if args.seconds <= 0:
        parser.error("--seconds must be positive, got %g" % args.seconds)
    try:
        import torch
    except ImportError as e:
        print("SKIPPED: PyTorch is not importable (%s)" % e)
        return 77
    if not torch.cuda.is_available():
        print("SKIPPED: torch.cuda.is_available() is False")
        return 77

    failures = 0

    def check(ok, what):
        nonlocal failures
        print("%s: %s" % ("ok" if ok else "FAIL", what))
        if not ok:
            failures += 1

    dev = torch.device("cuda:0")
    if not args.throughput_only:
        free, total = torch.cuda.mem_get_info(dev)
        check(total == args.expect_total,
              "torch.cuda.mem_get_info total is the slice's %d bytes (got %d)" %
              (args.expect_total, total))
        check(free <= total, "free memory (%d) is at most the total" % free)

        # A small transformer: forward, backward, optimizer step.
        torch.manual_seed(0)
        layer = torch.nn.TransformerEncoderLayer(d_model=512, nhead=8, dim_feedforward=2048,
                                                 batch_first=True)
        model = torch.nn.TransformerEncoder(layer, num_layers=4).to(dev)
        opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
        x = torch.randn(16, 128, 512, device=dev)
        loss = model(x).float().pow(2).mean()
        loss.backward()
        opt.step()
        torch.cuda.synchronize()
        check(bool(torch.isfinite(loss).item()), "a transformer's forward and backward ran "
              "(loss %.4f)" % loss.item())
        del model, opt, x, loss, layer
        torch.cuda.empty_cache()

        # Past the slice: PyTorch's own OOM, and the process goes on.
        chunks = []
        chunk = 256 << 20
        oom = None
        try:
            while len(chunks) * chunk <= 2 * args.expect_total:
                chunks.append(torch.empty(chunk, dtype=torch.uint8, device=dev))
        except torch.cuda.OutOfMemoryError as e:
            oom = e
        held = len(chunks) * chunk
        check(oom is not None and "CUDA out of memory" in str(oom),
              "allocating past the slice raises torch.cuda.OutOfMemoryError "
              "(%s)" % (str(oom).splitlines()[0] if oom else "no error"))
        check(held <= args.expect_total,
              "at most the slice was handed out before it (%d of %d bytes)" %
              (held, args.expect_total))
        check(torch.cuda.memory_reserved(dev) <= args.expect_total,
              "PyTorch's reserved memory (%d) is within the slice" %
              torch.cuda.memory_reserved(dev))
        del chunks
        torch.cuda.empty_cache()
        again = torch.empty(chunk, dtype=torch.uint8, device=dev)
        check(again.numel() == chunk, "after the OOM, freed memory is allocated again")
        del again
        torch.cuda.empty_cache()

    a = torch.randn(4096, 4096, device=dev, dtype=torch.bfloat16)
    b = torch.randn(4096, 4096, device=dev, dtype=torch.bfloat16)
    torch.cuda.synchronize()
    n = 0
    start = time.monotonic()
    while time.monotonic() - start < args.seconds:
        for _ in range(10):
            a @ b
        torch.cuda.synchronize()
        n += 10
    elapsed = time.monotonic() - start
    print("throughput %.1f" % (n / elapsed))
    if not args.throughput_only:
        print("%d failure(s)" % failures)
    return 0 if failures == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
