/**
 * MCP servers: the upstream MCP servers the gateway's /mcp aggregates, each with where it is, how
 * it is reached and the names of the headers sent to it (their values are stored encrypted and
 * never shown); a form that declares or replaces one (role admin), and a removal that asks to be
 * confirmed. A change is served by every replica within a second.
 */
import { useState } from 'preact/hooks';
import { CreateForm } from '../action-forms';
import type { AdminApi, McpServer } from '../admin-api';
import { ErrorBanner } from '../error-banner';
import { type Options, SelectField, TextField } from '../fields';
import { formatUnixSeconds } from '../format';
import { ManagedRow, type RemovalButtons } from '../managed-row';
import { EmptyRow, Page, RefreshButton, Table } from '../page';
import { useLoader } from '../use-loader';

const TRANSPORTS: Options<McpServer['transport']> = [
  ['streamable_http', 'Streamable HTTP'],
  ['sse', 'HTTP+SSE'],
];

function PutServerForm({ api, onSaved }: { api: AdminApi; onSaved: () => void }) {
  const [name, setName] = useState('');
  const [url, setUrl] = useState('');
  const [transport, setTransport] = useState<McpServer['transport']>('streamable_http');
  const [headerName, setHeaderName] = useState('');
  const [headerValue, setHeaderValue] = useState('');
  const save = async () => {
    const headers = headerName.trim() ? { headers: { [headerName.trim()]: headerValue } } : {};
    await api.mcpServers.replace(name.trim(), { url: url.trim(), transport, ...headers });
    setHeaderValue('');
    onSaved();
  };
  return (
    <CreateForm testId="put-mcp-server" title="Declare an MCP server" label="Save server" busyLabel="Saving…" onSubmit={save}>
      <div class="fields">
        <TextField label="Name" value={name} testId="mcp-server-name" placeholder="github" onInput={setName} />
        <TextField label="URL" inputMode="url" value={url} testId="mcp-server-url" placeholder="https://example.com/mcp" onInput={setUrl} />
        <SelectField label="Transport" value={transport} testId="mcp-server-transport" options={TRANSPORTS} onChange={setTransport} />
        <TextField label="Header" value={headerName} testId="mcp-server-header-name" placeholder="optional: Authorization" onInput={setHeaderName} />
        <TextField label="Header value" type="password" value={headerValue} testId="mcp-server-header-value" onInput={setHeaderValue} />
      </div>
      <p class="muted">Without a header, a server already declared keeps its stored headers. Header values are stored encrypted and never shown again.</p>
    </CreateForm>
  );
}

/** An MCP server's removal: its button and confirmation. */
const REMOVE_SERVER: RemovalButtons = { testId: 'mcp-server-delete', label: 'Remove', confirmLabel: 'Remove' };

function ServerRow({ api, server, canChange, onChanged }: { api: AdminApi; server: McpServer; canChange: boolean; onChanged: () => void }) {
  return (
    <ManagedRow
      row={{ 'data-testid': 'mcp-server-row', 'data-server-name': server.name }}
      id={server.name}
      collection={api.mcpServers}
      canChange={canChange}
      onChanged={onChanged}
      removal={{
        ...REMOVE_SERVER,
        question: (
          <>
            Remove the MCP server <code>{server.name}</code>? Its tools disappear from /mcp within a second.
          </>
        ),
      }}
    >
      <td>
        <code>{server.url}</code>
      </td>
      <td>{server.transport === 'sse' ? 'HTTP+SSE' : 'Streamable HTTP'}</td>
      <td>{server.header_names.length > 0 ? server.header_names.join(', ') : <span class="muted">—</span>}</td>
      <td>{server.auth === 'oauth' ? 'per-user OAuth' : 'headers'}</td>
      <td>{formatUnixSeconds(server.updated_at)}</td>
    </ManagedRow>
  );
}

/** The MCP servers page. */
export function McpServersPage({ api, canChange }: { api: AdminApi; canChange: boolean }) {
  const servers = useLoader(() => api.mcpServers.list(), [api]);
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
