d=$(dirname "$0"); exec tmlr-build "$d/softmax.cubin" --metadata "$d/softmax.json" --name softmax_sm90_cubin -o "${1:-$d/../../artifacts}"
