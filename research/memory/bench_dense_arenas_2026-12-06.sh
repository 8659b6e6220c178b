#!/bin/bash
# one heap arena (the new default) against glibc's default (MALLOC_ARENA_MAX=16 = 8 x 2 cores)
cd $(git rev-parse --show-toplevel)
PY=~/.cache/vidcorr-ci/py311/bin/python
export PYTHONPATH=$(git rev-parse --show-toplevel)
for i in 1 2; do
for arenas in default 16; do
  echo "== 288x384 threads 2 arenas $arenas"
  if [ $arenas = default ]; then env -u MALLOC_ARENA_MAX $PY benchmarks/bench_dense.py --sizes 288x384 --threads 2 --repeats 5 --refine none,variational
  else MALLOC_ARENA_MAX=$arenas $PY benchmarks/bench_dense.py --sizes 288x384 --threads 2 --repeats 5 --refine none,variational; fi
done; done
for arenas in default 16; do
  echo "== 720x1280 threads 1 refine variational arenas $arenas"
  if [ $arenas = default ]; then env -u MALLOC_ARENA_MAX $PY benchmarks/bench_dense.py --sizes 720x1280 --threads 1 --repeats 3 --refine variational
  else MALLOC_ARENA_MAX=$arenas $PY benchmarks/bench_dense.py --sizes 720x1280 --threads 1 --repeats 3 --refine variational; fi
done
