/**
 * How every translator reads its system's options: own properties only (nothing inherited from
 * a polluted prototype), an unknown option refused rather than dropped, and every problem an
 * {@link UntranslatableOptionError} naming the option in that system's own vocabulary.
 */
import { UntranslatableOptionError } from '../errors.js';

export class OptionReader {
  readonly #system: string;
  readonly #options: Record<string, unknown>;
  readonly #prefix: string;

  /**
   * @param known every option name the system has that the translator reads; any other own
   *   property of `options` is refused.
   */
  constructor(system: string, options: unknown, known: readonly string[], prefix = '') {
    this.#system = system;
    this.#prefix = prefix;
    if (typeof options !== 'object' || options === null || Array.isArray(options)) {
      throw new UntranslatableOptionError(system, prefix || 'options', `expected an object, got ${describe(options)}`);
    }
    this.#options = options as Record<string, unknown>;
    for (const name of Object.keys(options)) {
      if (!known.includes(name)) this.fail(name, `is not an option this translator knows (known: ${known.join(', ')})`);
    }
  }

  /** The option's value, or undefined when it is not an own property. */
  get(name: string): unknown {
    return Object.hasOwn(this.#options, name) ? this.#options[name] : undefined;
  }

  /** A reader for the nested options object `name`. */
  nested(name: string, known: readonly string[]): OptionReader {
    return new OptionReader(this.#system, this.get(name), known, this.path(name));
  }

  oneOf<T extends string>(name: string, allowed: readonly T[]): T | undefined {
    const value = this.get(name);
    if (value === undefined) return undefined;
    if (typeof value !== 'string' || !(allowed as readonly string[]).includes(value)) {
      this.fail(name, `${describe(value)} is not one of ${allowed.join(', ')}`);
    }
    return value as T;
  }

  boolean(name: string): boolean | undefined {
    const value = this.get(name);
    if (value !== undefined && typeof value !== 'boolean') this.fail(name, `expected true or false, got ${describe(value)}`);
    return value as boolean | undefined;
  }

  string(name: string): string | undefined {
    const value = this.get(name);
    if (value !== undefined && (typeof value !== 'string' || value.length === 0)) {
      this.fail(name, `expected a non-empty string, got ${describe(value)}`);
    }
    return value as string | undefined;
  }

  /** A list of strings, each from `allowed` when given; duplicates refused. */
  strings<T extends string = string>(name: string, allowed?: readonly T[]): T[] | undefined {
    const value = this.get(name);
    if (value === undefined) return undefined;
    if (!Array.isArray(value)) this.fail(name, `expected an array, got ${describe(value)}`);
    const seen = new Set<string>();
    (value as unknown[]).forEach((item, index) => {
      if (typeof item !== 'string' || item.length === 0)
        this.fail(`${name}[${index}]`, `expected a non-empty string, got ${describe(item)}`);
      if (allowed && !(allowed as readonly string[]).includes(item)) {
        this.fail(`${name}[${index}]`, `${describe(item)} is not one of ${allowed.join(', ')}`);
      }
      if (seen.has(item)) this.fail(`${name}[${index}]`, `${describe(item)} appears more than once`);
      seen.add(item);
    });
    return [...(value as T[])];
  }

  /** The option's full path, e.g. `deduplication.ttl`. */
  path(name: string): string {
    if (!this.#prefix) return name;
    return name.startsWith('[') ? `${this.#prefix}${name}` : `${this.#prefix}.${name}`;
  }

  fail(name: string, problem: string): never {
    throw new UntranslatableOptionError(this.#system, this.path(name), problem);
  }
}

export function describe(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  if (typeof value === 'string') return JSON.stringify(value);
  if (typeof value === 'number') return String(value);
  return typeof value;
}
