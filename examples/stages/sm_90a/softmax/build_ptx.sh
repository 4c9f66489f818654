d=$(dirname "$0"); exec tmlr-build "$d/softmax.ptx" --name softmax_sm90_ptx -o "${1:-$d/../../artifacts}"
