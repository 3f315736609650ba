/**
 * The metadata document a fake OAuth authorization server publishes at its well-known URL: RFC
 * 8414's /.well-known/oauth-authorization-server, or OpenID Connect Discovery's
 * /.well-known/openid-configuration for a fake OpenID provider (which extends it).
 */

/**
 * The metadata of the authorization server at `issuer`: each of `endpoints` (a field such as
 * `token_endpoint` or `jwks_uri`, and its path below the issuer) as a URL, the authorization code
 * flow with PKCE (S256), and each of `supported` as its `<name>_supported` field.
 */
export function authorizationServerMetadata(
  issuer: string,
  endpoints: Readonly<Record<string, string>>,
  supported: Readonly<Record<string, readonly string[]>>,
): Record<string, unknown> {
  return {
    issuer,
    ...Object.fromEntries(Object.entries(endpoints).map(([field, path]) => [field, `${issuer}${path}`])),
    response_types_supported: ['code'],
    code_challenge_methods_supported: ['S256'],
    ...Object.fromEntries(Object.entries(supported).map(([name, values]) => [`${name}_supported`, values])),
  };
}
