/**
 * The egress checker for fetching components: the source's own host (and the
 * token realms the operator listed for it) is reachable wherever it is (a
 * registry on a private network or on loopback is the operator's choice), every other host a redirect leads to must be public
 * (an object store), and plain http is spoken only to loopback hosts and
 * insecure registries, on every hop. Built on net/'s checker, so DNS answers
 * are pinned as for any other egress.
 */
import { EgressChecker, type EgressDecision } from '../net/egress-checker.js';
import { parseEgressAllowlist } from '../net/allowlist.js';
import { plainHttpAllowed } from './source.js';

export class SourceChecker extends EgressChecker {
  readonly #insecure: readonly string[];

  /** @param hosts the source's host name (no port), and any the operator listed for it: allowed whatever their address. */
  constructor(hosts: string | readonly string[], insecureRegistries: readonly string[]) {
    super({ label: 'EGRESS_UNRESTRICTED', allow: parseEgressAllowlist((typeof hosts === 'string' ? [hosts] : hosts).map((host) => host.replace(/^\[|\]$/g, ''))) });
    this.#insecure = insecureRegistries;
  }

  override async check(url: URL | string): Promise<EgressDecision> {
    let parsed: URL;
    try {
      parsed = typeof url === 'string' ? new URL(url) : url;
    } catch {
      return super.check(url);
    }
    if (parsed.protocol === 'http:' && !plainHttpAllowed(parsed, this.#insecure)) {
      const port = parsed.port === '' ? 80 : Number(parsed.port);
      return { allowed: false, host: parsed.hostname, port, cause: 'scheme', reason: `plain http to ${parsed.host} is refused: only loopback hosts and distribution.insecure_registries may be reached without TLS` };
    }
    return super.check(parsed);
  }
}
