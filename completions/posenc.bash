_posenc_completion() {
    local IFS=$'\n'
    COMPREPLY=( $( env _POSENC_COMPLETE_ARGS="${COMP_LINE:0:$COMP_POINT}" _POSENC_COMPLETE=complete_bash posenc ) )
    return 0
}
complete -o default -F _posenc_completion posenc
