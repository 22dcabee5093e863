Register-ArgumentCompleter -Native -CommandName posenc -ScriptBlock {
    param($wordToComplete, $commandAst, $cursorPosition)
    $env:_POSENC_COMPLETE = "complete_powershell"
    $env:_POSENC_COMPLETE_ARGS = $commandAst.ToString().Substring(0, $cursorPosition - $commandAst.Extent.StartOffset)
    posenc | ForEach-Object { [System.Management.Automation.CompletionResult]::new($_, $_, 'ParameterValue', $_) }
    Remove-Item Env:_POSENC_COMPLETE
    Remove-Item Env:_POSENC_COMPLETE_ARGS
}
