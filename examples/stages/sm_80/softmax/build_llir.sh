d=$(dirname "$0"); exec tmlr-build "$d/softmax.llir" --name softmax_sm80_llir -o "${1:-$d/../../artifacts}"
