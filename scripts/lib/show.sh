# show COMMAND [ARG...]: prints the command line (each argument quoted where it needs to be)
# after an empty line, then runs it; a non-zero exit status is printed and the caller goes on.
# The figure scripts (scripts/figures, bench/*/..._tables.sh) source it, so that every figure
# stands after the command that makes it.
show() {
  local a line=
  for a; do
    if [[ $a =~ ^[A-Za-z0-9_./:=,@%+-]+$ ]]; then line+=" $a"; else line+=" ${a@Q}"; fi
  done
  printf '\n$%s\n' "$line"
  "$@" || echo "(exit status $?)"
}
