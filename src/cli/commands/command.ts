/** What every CLI command returns: text for stdout and an exit code (0 unless stated). */
export interface CommandResult {
  readonly output: string;
  readonly exitCode?: number;
}
