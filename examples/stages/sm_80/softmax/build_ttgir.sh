d=$(dirname "$0"); exec tmlr-build "$d/softmax.ttgir" --name softmax_sm80_ttgir -o "${1:-$d/../../artifacts}"
