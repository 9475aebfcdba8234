export default function ExecutionPage() {
  return (
    <section className="page">
      <h1>Execution</h1>
    </section>
  );
}
