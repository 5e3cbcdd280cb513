/**
 * A bench's own command line, after `npm run bench -- <suite>` (bench/run.ts) or when its file is run directly:
 * `--name value` options and `--name` flags.
 */
export const benchOptions = (suite: string) => {
  const argv = process.argv.slice(process.argv[2] === suite ? 3 : 2)
  /** The value after `--name`; undefined when the option is absent. */
  const option = (name: string): string | undefined => {
    const index = argv.indexOf(`--${name}`)
    return index === -1 ? undefined : argv[index + 1]
  }
  return {
    /** The bench's own arguments, as given. */
    argv,
    option,
    /** `--name`'s value as a number, `fallback` when the option is absent. */
    number: (name: string, fallback: number): number => {
      const value = option(name)
      return value === undefined ? fallback : Number(value)
    },
    /** Whether `--name` was given. */
    flag: (name: string): boolean => argv.includes(`--${name}`)
  }
}
