import type { Browser, Page, WebSocket as PageWebSocket } from 'playwright-core';

/** Debian's Chromium; the browser test never downloads one. */
export const CHROMIUM_PATH = '/usr/bin/chromium';

export const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--no-first-run',
  '--disable-quic',
];

/** A hang catcher, never a verdict: a cold Chromium on a loaded two-core machine can be slow. */
export const UI_TIMEOUT_MS = 120_000;

/** True for URLs that stay on this machine (loopback, or in-page data:/blob: URLs). */
export function isLocalUrl(raw: string): boolean {
  const url = new URL(raw);
  if (url.protocol === 'data:' || url.protocol === 'blob:' || url.protocol === 'about:') return true;
  return ['127.0.0.1', 'localhost', '[::1]'].includes(url.hostname);
}

/** Every URL the page requests over HTTP(S) or opens as a WebSocket. */
export interface NetworkLog {
  requests: string[];
  webSockets: PageWebSocket[];
}

export function recordNetwork(page: Page): NetworkLog {
  const log: NetworkLog = { requests: [], webSockets: [] };
  page.on('request', (request) => log.requests.push(request.url()));
  page.on('websocket', (ws) => log.webSockets.push(ws));
  return log;
}

/** Monaco renders spaces as no-break spaces; tests compare plain text. */
function normalize(text: string): string {
  return text.replace(/\u00a0/g, ' ');
}

/**
 * The GraphiQL page (GraphiQL 5: Monaco editors). Drives it as a user does: the
 * operation editor takes keyboard input, the run button executes, the result pane is
 * read as rendered text.
 */
export class GraphiQLPage {
  constructor(readonly page: Page) {}

  static async open(browser: Browser, url: string): Promise<{ graphiql: GraphiQLPage; network: NetworkLog }> {
    const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
    page.setDefaultTimeout(UI_TIMEOUT_MS);
    const network = recordNetwork(page);
    await page.goto(url, { waitUntil: 'load' });
    const graphiql = new GraphiQLPage(page);
    // Ready when Monaco has rendered the operation editor's default text.
    await page.locator('.graphiql-query-editor .monaco-editor .view-lines').waitFor({ state: 'visible' });
    await page.waitForFunction(() => (document.querySelector('.graphiql-query-editor .view-lines')?.textContent ?? '').length > 0);
    return { graphiql, network };
  }

  /** Replaces the operation editor's text by typing into it. */
  async setOperation(text: string): Promise<void> {
    const editor = this.page.locator('.graphiql-query-editor .monaco-editor');
    await editor.click();
    await this.page.keyboard.press('ControlOrMeta+A');
    await this.page.keyboard.press('Delete');
    // One input event: Monaco's auto-closing brackets and suggestions only react to
    // single typed characters, so the text arrives exactly as given.
    await this.page.keyboard.insertText(text);
    const expected = normalize(text).replace(/\s+/g, '');
    await this.page.waitForFunction(
      (want) => (document.querySelector('.graphiql-query-editor .view-lines')?.textContent ?? '').replace(/\u00a0/g, ' ').replace(/\s+/g, '') === want,
      expected,
    );
  }

  async run(): Promise<void> {
    await this.page.locator('button.graphiql-execute-button').click();
  }

  /** The result pane's rendered text (only what Monaco has on screen). */
  async resultText(): Promise<string> {
    return normalize((await this.page.locator('.result-window .view-lines').textContent()) ?? '');
  }

  /** Waits until the result pane shows every one of the strings; returns its text. */
  async waitForResult(...needles: string[]): Promise<string> {
    await this.page.waitForFunction((wanted) => {
      const text = (document.querySelector('.result-window .view-lines')?.textContent ?? '').replace(/\u00a0/g, ' ');
      return wanted.every((w) => text.includes(w));
    }, needles);
    return this.resultText();
  }
}
