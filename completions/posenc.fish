complete --command posenc --arguments "(env _POSENC_COMPLETE_ARGS=(commandline -cp) _POSENC_COMPLETE=complete_fish posenc)"
