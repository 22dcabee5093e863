"""Goldens of torch's 2-D resampling kernels over random position grids (run once in the side environment).

    /work/side/venv/bin/python tools/golden/resample_torch.py tests/data/vision/resample_torch.npz

Every mode posenc reproduces (bicubic, bilinear; antialias off/on; align_corners off/on; size or scale_factor),
over grids up- and downsampled, square and not. The input grid is ``h x w x dim`` (a ViT table's patch rows);
torch sees it as ``(1, dim, h, w)`` made by ``reshape(1, h, w, dim).permute(0, 3, 1, 2)``, as the models do.
"""

import sys

import numpy as np
import torch
import torch.nn.functional as F

CASES = [  # (old h, old w, new h, new w)
    (7, 7, 10, 10), (7, 7, 4, 4), (7, 7, 9, 5), (6, 5, 3, 8), (7, 7, 7, 12), (5, 5, 1, 3), (4, 4, 17, 13),
]
FACTORS = [(7, 7, 1.43, 0.61), (6, 5, 1.5, 2.2)]  # (old h, old w, factor h, factor w)


def main(out: str) -> None:
    rng = np.random.default_rng(37)
    arrays = {"torch_version": np.array(torch.__version__)}
    n = 0
    for mode in ("bicubic", "bilinear"):
        for aa in (False, True):
            for ac in (False, True):
                for h, w, H, W in CASES:
                    grid = rng.standard_normal((h, w, 3)).astype(np.float32)
                    t = torch.from_numpy(grid).reshape(1, h, w, 3).permute(0, 3, 1, 2)
                    y = F.interpolate(t, size=(H, W), mode=mode, align_corners=ac, antialias=aa)
                    key = f"{n:03d}|{mode}|{int(aa)}|{int(ac)}|size|{H}|{W}"
                    arrays[key + "|in"] = grid
                    arrays[key + "|out"] = y.permute(0, 2, 3, 1)[0].numpy().copy()
                    n += 1
                for h, w, fh, fw in FACTORS:
                    grid = rng.standard_normal((h, w, 3)).astype(np.float32)
                    t = torch.from_numpy(grid).reshape(1, h, w, 3).permute(0, 3, 1, 2)
                    y = F.interpolate(t, scale_factor=(fh, fw), mode=mode, align_corners=ac, antialias=aa)
                    key = f"{n:03d}|{mode}|{int(aa)}|{int(ac)}|scale|{fh!r}|{fw!r}"
                    arrays[key + "|in"] = grid
                    arrays[key + "|out"] = y.permute(0, 2, 3, 1)[0].numpy().copy()
                    n += 1
    np.savez_compressed(out, **arrays)
    print(f"{n} cases -> {out}")


if __name__ == "__main__":
    main(sys.argv[1])
