/**
 * MCP servers: the upstream MCP servers the gateway's /mcp aggregates, each with where it is, how
 * it is reached and the names of the headers sent to it (their values are stored encrypted and
 * never shown); a form that declares or replaces one (role admin), and a removal that asks to be
 * confirmed. A change is served by every replica within a second.
 */
import { useState } from 'preact/hooks';
import type { AdminApi, McpServer } from '../admin-api';
import { ConfirmDialog } from '../confirm-dialog';
import { ErrorBanner } from '../error-banner';
import { formatUnixSeconds } from '../format';
import { EmptyRow, Page, RefreshButton, SubmitRow, Table } from '../page';
import { useAction } from '../use-action';
import { asApiError, useLoader } from '../use-loader';

function PutServerForm({ api, onSaved }: { api: AdminApi; onSaved: () => void }) {
  const [name, setName] = useState('');
  const [url, setUrl] = useState('');
  const [transport, setTransport] = useState<'streamable_http' | 'sse'>('streamable_http');
  const [headerName, setHeaderName] = useState('');
  const [headerValue, setHeaderValue] = useState('');
  const { error, busy, submit } = useAction(asApiError);
  return (
    <form
      class="card"
      data-testid="put-mcp-server-form"
      onSubmit={submit(async () => {
        const headers = headerName.trim() ? { headers: { [headerName.trim()]: headerValue } } : {};
        await api.putMcpServer(name.trim(), { url: url.trim(), transport, ...headers });
        setHeaderValue('');
        onSaved();
      })}
    >
      <h2>Declare an MCP server</h2>
      <div class="fields">
        <label>
          Name
          <input
            type="text"
            autocomplete="off"
            value={name}
            placeholder="github"
            onInput={(event) => setName(event.currentTarget.value)}
            data-testid="mcp-server-name"
          />
        </label>
        <label>
          URL
          <input
            type="url"
            autocomplete="off"
            value={url}
            placeholder="https://example.com/mcp"
            onInput={(event) => setUrl(event.currentTarget.value)}
            data-testid="mcp-server-url"
          />
        </label>
        <label>
          Transport
          <select
            value={transport}
            onChange={(event) => setTransport(event.currentTarget.value as 'streamable_http' | 'sse')}
            data-testid="mcp-server-transport"
          >
            <option value="streamable_http">Streamable HTTP</option>
            <option value="sse">HTTP+SSE</option>
          </select>
        </label>
        <label>
          Header
          <input
            type="text"
            autocomplete="off"
            value={headerName}
            placeholder="optional: Authorization"
            onInput={(event) => setHeaderName(event.currentTarget.value)}
            data-testid="mcp-server-header-name"
          />
        </label>
        <label>
          Header value
          <input
            type="password"
            autocomplete="off"
            value={headerValue}
            onInput={(event) => setHeaderValue(event.currentTarget.value)}
            data-testid="mcp-server-header-value"
          />
        </label>
      </div>
      <p class="muted">Without a header, a server already declared keeps its stored headers. Header values are stored encrypted and never shown again.</p>
      <SubmitRow error={error} errorTestId="put-mcp-server-error" busy={busy} label="Save server" busyLabel="Saving…" testId="put-mcp-server-submit" />
    </form>
  );
}

function ServerRow({ api, server, canChange, onChanged }: { api: AdminApi; server: McpServer; canChange: boolean; onChanged: () => void }) {
  const [confirming, setConfirming] = useState(false);
  const { error, busy, run } = useAction(asApiError);
  return (
    <tr data-testid="mcp-server-row" data-server-name={server.name}>
      <td>
        <code>{server.name}</code>
      </td>
      <td>
        <code>{server.url}</code>
      </td>
      <td>{server.transport === 'sse' ? 'HTTP+SSE' : 'Streamable HTTP'}</td>
      <td>{server.header_names.length > 0 ? server.header_names.join(', ') : <span class="muted">—</span>}</td>
      <td>{server.auth === 'oauth' ? 'per-user OAuth' : 'headers'}</td>
      <td>{formatUnixSeconds(server.updated_at)}</td>
      <td>
        {canChange && !confirming && (
          <button type="button" class="danger" onClick={() => setConfirming(true)} data-testid="mcp-server-delete">
            Remove
          </button>
        )}
        {confirming && (
          <ConfirmDialog
            testId="mcp-server-delete"
            error={error}
            busy={busy}
            confirmLabel="Remove"
            onConfirm={() =>
              run(async () => {
                await api.deleteMcpServer(server.name);
                setConfirming(false);
                onChanged();
              })
            }
            onCancel={() => setConfirming(false)}
          >
            Remove the MCP server <code>{server.name}</code>? Its tools disappear from /mcp within a second.
          </ConfirmDialog>
        )}
      </td>
    </tr>
  );
}

/** The MCP servers page. */
export function McpServersPage({ api, canChange }: { api: AdminApi; canChange: boolean }) {
  const servers = useLoader(() => api.listMcpServers(), [api]);
  const list = servers.data ?? [];
  return (
    <Page name="mcp-servers" title="MCP servers" loaded={servers} tools={<RefreshButton loaded={servers} testId="mcp-servers-refresh" />}>
      {canChange && <PutServerForm api={api} onSaved={servers.reload} />}
      <ErrorBanner error={servers.error} />
      <Table testId="mcp-servers-table" columns={['Name', 'URL', 'Transport', 'Headers', 'Auth', 'Updated', '']}>
        {list.map((server) => (
          <ServerRow key={server.name} api={api} server={server} canChange={canChange} onChanged={servers.reload} />
        ))}
        <EmptyRow shown={servers.data !== undefined && list.length === 0} columns={7}>
          No MCP servers yet: declare one, then point an agent at /mcp with a gateway key.
        </EmptyRow>
      </Table>
    </Page>
  );
}
